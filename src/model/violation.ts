/**
 * One reason a definition, manifest or document is invalid (seed 003 §10.2). `path` is a JSON Pointer
 * into the checked value; `line` and `column` point into its source text when that is known.
 */
export interface Violation {
  path: string;
  rule: string;
  message: string;
  expected?: string;
  actual?: string;
  line?: number;
  column?: number;
}
