/** One flag: its type, environment twin, help, and allowed values. */
export interface Setting {
  readonly type: "string" | "integer" | "number" | "boolean";
  /** A repeatable flag; its environment twin is comma-separated, its config key a list. */
  readonly multiple?: boolean;
  readonly env: string;
  readonly help: string;
  readonly choices?: readonly string[];
}
