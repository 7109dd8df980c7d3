/**
 * The shapes of names in a definition: ids, persona names, versions, function and variable names,
 * shared by every part of the model. IdSchema is the one zod schema here: it is small, so it is built
 * when the module loads (it always was), where the larger schemas wait for their first use.
 */
import * as z from 'zod';

/**
 * Ids: WorkRail's two forms, legacy (lowercase letters, digits, `_` and `-`) and namespaced
 * (`ns.name`, each part starting with a letter). No `/`, no leading dot and no `..`, so an id used as
 * a file name (`<id>.json`) always stays inside its directory.
 */
export const ID_PATTERN = '^(?:[a-z0-9_-]+|[a-z][a-z0-9_-]*\\.[a-z][a-z0-9_-]*)$';
const idRegex = new RegExp(ID_PATTERN);

/** Workflow ids and step ids share one shape (seed 001/002 input schemas, WorkRail's id forms). */
export const IdSchema = z
  .string()
  .min(3)
  .max(64)
  .regex(idRegex)
  .describe(
    'Lowercase letters, digits, _ and -, optionally namespaced as ns.name (e.g. wr.coding-task); 3-64 characters',
  );

/** Persona names stay plain (they are file names in the persona folder). */
export const PERSONA_NAME = /^[a-z0-9-]+$/;

/** A definition's version: semantic versioning (major.minor.patch, optional pre-release and build). */
export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** A function name of WorkRail functionDefinitions (an identifier). */
export const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Loop variables are plain top-level context names (dotted names would be unreachable by conditions). */
export const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
