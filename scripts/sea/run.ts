// Child-process helper for the build scripts: runs a command with a time limit and returns or streams its output.
import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Receives each output line as it arrives (stdout and stderr); when absent, output is only collected. */
  onLine?: (line: string) => void;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs `command args` to completion (killed after timeoutMs, default 15 min); never throws, the result says how it ended. */
export function run(
  command: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 15 * 60_000,
    });
    const chunks: string[] = [];
    let pending = '';
    const onData = (data: Buffer): void => {
      const text = data.toString('utf8');
      chunks.push(text);
      if (!options.onLine) return;
      const lines = (pending + text).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) options.onLine(line);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (error) =>
      resolve({ code: null, signal: null, output: `${chunks.join('')}\n${error.message}` }),
    );
    child.on('close', (code, signal) => {
      if (pending && options.onLine) options.onLine(pending);
      resolve({ code, signal, output: chunks.join('') });
    });
  });
}

/** Runs the command and returns its output; throws with the output's tail when it does not exit 0. */
export async function runOrThrow(
  command: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code === 0) return result.output;
  const how = result.signal ? `signal ${result.signal}` : `exit code ${String(result.code)}`;
  const tail = result.output.split('\n').slice(-40).join('\n');
  throw new Error(`build: ${command} ${args.join(' ')} failed (${how})\n${tail}`);
}
