/**
 * Versioned schema migrations, applied in order at start-up, each in its own transaction. Versions
 * are 1..n with no gaps (a test checks it); never edit a released migration, add a new one.
 */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'executions, steps, artifacts, telemetry, submissions, pinned definitions',
    sql: `
      CREATE TABLE workflow_definitions (
        hash TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL
      );

      CREATE TABLE workflow_executions (
        execution_id TEXT PRIMARY KEY,
        workflow_name TEXT NOT NULL,
        definition_hash TEXT NOT NULL REFERENCES workflow_definitions(hash),
        state TEXT NOT NULL CHECK (state IN ('idle','running','paused','completed','failed','abandoned','diverged')),
        current_step TEXT,
        current_seq INTEGER NOT NULL DEFAULT 0,
        completed_steps TEXT NOT NULL DEFAULT '[]',
        context TEXT NOT NULL DEFAULT '{}',
        token_nonce TEXT,
        token_attempt INTEGER NOT NULL DEFAULT 0,
        token_issued_at TEXT,
        token_expires_at TEXT,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        completed_at TEXT,
        duration_ms INTEGER,
        metadata TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX workflow_executions_by_workflow ON workflow_executions(workflow_name, updated_at);
      CREATE INDEX workflow_executions_by_state ON workflow_executions(state, updated_at);
      CREATE INDEX workflow_executions_by_update ON workflow_executions(updated_at);

      -- The database refuses what the state machine refuses (src/engine/state-machine.ts).
      CREATE TRIGGER workflow_executions_state_transition
      BEFORE UPDATE OF state ON workflow_executions
      WHEN NEW.state <> OLD.state AND NOT (
        (OLD.state = 'idle' AND NEW.state = 'running') OR
        (OLD.state = 'running' AND NEW.state IN ('completed','failed','paused','abandoned','diverged')) OR
        (OLD.state = 'paused' AND NEW.state IN ('running','abandoned'))
      )
      BEGIN
        SELECT RAISE(ABORT, 'invalid state transition');
      END;

      CREATE TABLE workflow_steps (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        execution_id TEXT NOT NULL REFERENCES workflow_executions(execution_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        step_name TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        iteration INTEGER,
        status TEXT NOT NULL CHECK (status IN ('pending','running','completed','failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        started_at TEXT,
        completed_at TEXT,
        duration_ms INTEGER,
        output TEXT,
        UNIQUE (execution_id, seq)
      );

      CREATE TABLE workflow_artifacts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        execution_id TEXT NOT NULL REFERENCES workflow_executions(execution_id) ON DELETE CASCADE,
        step_name TEXT NOT NULL,
        artifact_type TEXT NOT NULL CHECK (artifact_type IN ('file','data','report','finding')),
        name TEXT NOT NULL,
        content TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        metadata TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX workflow_artifacts_by_execution ON workflow_artifacts(execution_id, step_name);

      CREATE TABLE telemetry_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        event_type TEXT NOT NULL,
        execution_id TEXT,
        step_name TEXT,
        agent_name TEXT,
        metadata TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX telemetry_events_by_execution ON telemetry_events(execution_id, id);
      CREATE INDEX telemetry_events_by_type ON telemetry_events(event_type, id);

      CREATE TABLE token_submissions (
        nonce TEXT PRIMARY KEY,
        execution_id TEXT NOT NULL REFERENCES workflow_executions(execution_id) ON DELETE CASCADE,
        output_hash TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'principals on executions, leases on command steps',
    sql: `
      ALTER TABLE workflow_executions ADD COLUMN principal TEXT NOT NULL DEFAULT 'local';
      CREATE INDEX workflow_executions_by_principal ON workflow_executions(principal, updated_at);
      ALTER TABLE workflow_steps ADD COLUMN lease_owner TEXT;
      ALTER TABLE workflow_steps ADD COLUMN lease_expires_at TEXT;
    `,
  },
  {
    version: 3,
    name: 'tasks (MCP tasks: status, results, input requests, leases)',
    sql: `
      CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL DEFAULT '{}',
        run_id TEXT,
        workflow_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('working','input_required','completed','failed','cancelled')),
        status_message TEXT,
        snapshot TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        last_updated_at TEXT NOT NULL,
        ttl_ms INTEGER,
        expires_at TEXT,
        poll_interval_ms INTEGER NOT NULL,
        input_requests TEXT NOT NULL DEFAULT '{}',
        input_responses TEXT NOT NULL DEFAULT '{}',
        result TEXT,
        error TEXT,
        owner TEXT,
        lease_expires_at TEXT,
        meta TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX tasks_by_principal ON tasks(principal, created_at, task_id);
      CREATE INDEX tasks_by_run ON tasks(run_id);
      CREATE INDEX tasks_by_status ON tasks(status);
      CREATE INDEX tasks_by_expiry ON tasks(expires_at);

      -- A terminal task never changes status (MCP tasks): the database refuses it too.
      CREATE TRIGGER tasks_terminal_status
      BEFORE UPDATE OF status ON tasks
      WHEN OLD.status IN ('completed','failed','cancelled') AND NEW.status <> OLD.status
      BEGIN
        SELECT RAISE(ABORT, 'task status is terminal');
      END;
    `,
  },
  {
    version: 4,
    name: 'indexes to page, filter and count the executions of a principal',
    sql: `
      -- Keyset pages by (updated_at, execution_id); state rides along so counts never read the table.
      CREATE INDEX workflow_executions_by_principal_page
        ON workflow_executions(principal, updated_at, execution_id, state);
      CREATE INDEX workflow_executions_by_principal_state
        ON workflow_executions(principal, state, updated_at, execution_id);
      CREATE INDEX workflow_executions_by_principal_workflow
        ON workflow_executions(principal, workflow_name, updated_at, execution_id, state);
      DROP INDEX workflow_executions_by_principal;
    `,
  },
  {
    version: 5,
    name: 'runtime workflows, catalogs and credential bindings shared by replicas',
    // PostgreSQL keeps what agents save at runtime in a table so replicas share it; a SQLite server is
    // one machine and keeps those files in the runtime dir, so here the number is recorded and nothing
    // else changes (a comment, not an empty string: an empty migration would be skipped unrecorded).
    sql: '-- PostgreSQL only (runtime_documents); SQLite servers keep runtime workflows and catalogs in files',
  },
  {
    version: 6,
    name: 'executions counted per principal, day, workflow and state',
    // The dashboard's counts per state (any filter of principal, workflow and time of the last change)
    // read these instead of counting the executions: a day's row per (principal, workflow, state) and
    // an all-time row (day '*'), kept by triggers. A step that changes neither the state nor the day of
    // its last update (almost every step) does not touch them.
    sql: `
      CREATE TABLE execution_counts (
        principal TEXT NOT NULL,
        day TEXT NOT NULL,
        workflow_name TEXT NOT NULL,
        state TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (principal, day, workflow_name, state)
      ) WITHOUT ROWID;
      INSERT INTO execution_counts
        SELECT principal, substr(updated_at, 1, 10), workflow_name, state, COUNT(*) FROM workflow_executions
        GROUP BY 1, 2, 3, 4;
      INSERT INTO execution_counts
        SELECT principal, '*', workflow_name, state, COUNT(*) FROM workflow_executions GROUP BY 1, 3, 4;

      CREATE TRIGGER execution_counts_insert AFTER INSERT ON workflow_executions
      BEGIN
        INSERT INTO execution_counts VALUES
          (NEW.principal, substr(NEW.updated_at, 1, 10), NEW.workflow_name, NEW.state, 1),
          (NEW.principal, '*', NEW.workflow_name, NEW.state, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER execution_counts_delete AFTER DELETE ON workflow_executions
      BEGIN
        UPDATE execution_counts SET n = n - 1
        WHERE principal = OLD.principal AND workflow_name = OLD.workflow_name AND state = OLD.state
          AND day IN (substr(OLD.updated_at, 1, 10), '*');
      END;
      CREATE TRIGGER execution_counts_update AFTER UPDATE OF state, updated_at ON workflow_executions
      WHEN OLD.state <> NEW.state OR substr(OLD.updated_at, 1, 10) <> substr(NEW.updated_at, 1, 10)
      BEGIN
        UPDATE execution_counts SET n = n - 1
        WHERE principal = OLD.principal AND workflow_name = OLD.workflow_name AND state = OLD.state
          AND day IN (substr(OLD.updated_at, 1, 10), '*');
        INSERT INTO execution_counts VALUES
          (NEW.principal, substr(NEW.updated_at, 1, 10), NEW.workflow_name, NEW.state, 1),
          (NEW.principal, '*', NEW.workflow_name, NEW.state, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
      END;
    `,
  },
  {
    version: 7,
    name: 'approvals: step outputs waiting for a person, and the decisions',
    // One row per submission of a step with `approval`: the output held back, and then who decided,
    // how, when and why. Pending ones are listed oldest first (the CLI, the dashboard's Approvals page).
    sql: `
      CREATE TABLE approvals (
        approval_id TEXT PRIMARY KEY,
        execution_id TEXT NOT NULL REFERENCES workflow_executions(execution_id) ON DELETE CASCADE,
        principal TEXT NOT NULL,
        workflow_name TEXT NOT NULL,
        step_name TEXT NOT NULL,
        seq INTEGER NOT NULL,
        prompt TEXT NOT NULL,
        approvers TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending','approved','rejected')),
        requested_at TEXT NOT NULL,
        expires_at TEXT,
        output TEXT NOT NULL,
        poll_nonce TEXT NOT NULL,
        decided_by TEXT,
        decided_via TEXT,
        decided_at TEXT,
        reason TEXT
      );
      CREATE INDEX approvals_by_status ON approvals(status, requested_at, approval_id);
      CREATE INDEX approvals_by_execution ON approvals(execution_id, requested_at, approval_id);
    `,
  },
  {
    version: 8,
    name: 'child executions: the execution that delegated to each',
    // A delegating step's children point at their parent (it never changes); listing a parent's children
    // and counting a principal's open children (the fan-out cap) each read a partial index of children.
    sql: `
      ALTER TABLE workflow_executions ADD COLUMN parent_id TEXT;
      CREATE INDEX executions_by_parent ON workflow_executions(parent_id, updated_at, execution_id)
        WHERE parent_id IS NOT NULL;
      CREATE INDEX open_children_by_principal ON workflow_executions(principal, state)
        WHERE parent_id IS NOT NULL;
    `,
  },
  {
    version: 9,
    name: 'execution records: each event with a hash that covers the previous one',
    // Appended in the event's own transaction (src/executions/record-chain.ts); the key refuses a second
    // event at one place of a record, so two transactions racing on one chain cannot both append.
    sql: `
      CREATE TABLE execution_record (
        execution_id TEXT NOT NULL REFERENCES workflow_executions(execution_id) ON DELETE CASCADE,
        n INTEGER NOT NULL,
        type TEXT NOT NULL,
        at TEXT NOT NULL,
        step TEXT,
        body TEXT NOT NULL,
        prev TEXT NOT NULL,
        hash TEXT NOT NULL,
        migrated INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (execution_id, n)
      );
    `,
  },
];
