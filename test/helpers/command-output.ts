/** A CLI command's signature: its arguments, then where it writes its output and its errors. */
type Command = (argv: readonly string[], out: (text: string) => void, err: (text: string) => void) => Promise<number>;

/** Runs `command` in this process and returns its exit code with what it wrote to each stream. */
export async function commandOutput(
  command: Command,
  argv: readonly string[],
): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await command(
    argv,
    (text) => {
      out += text;
    },
    (text) => {
      err += text;
    },
  );
  return { code, out, err };
}
