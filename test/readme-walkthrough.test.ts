// The README's walkthrough, pasted as written into a fresh copy of the repository: its shell blocks run in order in one
// shell, `make serve &` first installing the dependencies (a stand-in for npm ci that takes seconds), on a free port.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { within } from './support/deadline.ts';
import { freePort } from './support/daemon.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** What a fresh clone does not have: installed packages, git's data, and what running and building leave behind. */
const NOT_IN_A_CLONE = new Set(['node_modules', '.git', 'data', 'dist', 'build', '.cache']);
/** How long the stand-in install takes: long enough that a step not waiting for it finds no node_modules (the next
 *  step starts while make is still reading the Makefile, a second before the install ends). */
const INSTALL_SECONDS = 1;

/** The ```sh blocks of the README's walkthrough section, in order. */
export function walkthroughBlocks(readme: string): string[] {
  const start = readme.indexOf('<!-- section: walkthrough -->');
  const end = readme.indexOf('<!-- /section: walkthrough -->');
  assert.ok(start >= 0 && end > start, 'README.md has a walkthrough section');
  const section = readme.slice(start, end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** The PIDs of the processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …: the comm may hold spaces and parentheses, so read past the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

describe('the README walkthrough', () => {
  const work = mkdtempSync(join(tmpdir(), 'feedsub-walkthrough-'));
  let group: number | undefined;
  after(() => {
    // The group outlives its leader (the shell exits first; make and the daemon stay): kill it by its id regardless.
    if (group !== undefined) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        /* the group has already exited */
      }
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('works pasted line by line into a fresh clone, while make serve is still installing', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const blocks = walkthroughBlocks(readme);
    assert.ok(blocks.length >= 3, `only ${blocks.length} shell blocks`);
    assert.match(blocks[0]!, /^make serve &$/m);

    const clone = join(work, 'clone');
    cpSync(ROOT, clone, {
      recursive: true,
      filter: (src) => !NOT_IN_A_CLONE.has(relative(ROOT, src).split(sep)[0]!),
    });
    // The stand-in for `npm ci`: slow, then node_modules as links to the repository's packages, which it never writes
    // (make's marker file lands in the clone's own node_modules folder).
    const npm = join(work, 'npm');
    writeFileSync(
      npm,
      [
        '#!/bin/sh',
        'set -eu',
        '[ "$1" = ci ] || { echo "npm stand-in: only ci" >&2; exit 1; }',
        'echo "npm stand-in: installing"',
        `sleep ${INSTALL_SECONDS}`,
        'mkdir node_modules',
        'for entry in "$REAL_MODULES"/* "$REAL_MODULES"/.bin; do ln -s "$entry" node_modules/; done',
        'echo "npm stand-in: added packages"',
        '',
      ].join('\n'),
    );
    chmodSync(npm, 0o755);

    const port = await freePort();
    const script = [
      ...blocks.map((b) => b.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)),
      'echo', // the last answer has no newline of its own
      'echo "walkthrough: serve_pid=$! key=$KEY endpoint_id=$ENDPOINT_ID"',
    ].join('\n');
    const env: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env))
      if (!/^(FEEDSUB_|MAKE|MFLAGS|NODE_OPTIONS|NODE_TEST)/.test(name)) env[name] = value;
    Object.assign(env, {
      NPM: npm,
      REAL_MODULES: join(ROOT, 'node_modules'),
      FEEDSUB_SERVER_PORT: String(port),
      WAIT_SECONDS: '60',
    });
    const shell = spawn('bash', ['-c', script], {
      cwd: clone,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: make and the daemon it starts stay in it, for the cleanup
    });
    group = shell.pid;
    let out = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    shell.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // 'close': every process holding the output pipes is gone (the shell, make, and the daemon make started).
    const closed = new Promise<void>((resolve) => shell.once('close', () => resolve()));
    const code = await within(
      new Promise<number | null>((resolve) => shell.once('exit', (c) => resolve(c))),
      60_000,
      `the walkthrough's commands:\n${out}`,
    );
    assert.equal(code, 0, out);

    const said = /^walkthrough: serve_pid=(\d+) key=(\S*) endpoint_id=(\S*)$/m.exec(out);
    assert.ok(said, out);
    const makePid = Number(said[1]);
    assert.match(said[2]!, /^fsk_[A-Za-z0-9_-]{43}$/, `KEY:\n${out}`);
    assert.match(said[3]!, /^[0-9a-f]{24}$/, `ENDPOINT_ID:\n${out}`);
    assert.match(out, new RegExp(`"endpoint":"${said[3]}"`), 'the subscription names the endpoint');
    assert.match(out, /"metadata":\{"user":42\}/);

    // make said what it was doing before and after the install, and the wait step ended after both.
    const order = [
      'make: installing dependencies',
      'npm stand-in: added packages',
      'make: dependencies installed in',
      'wait: feedsub answers at',
    ].map((line) => ({ line, at: out.indexOf(line) }));
    for (const { line, at } of order) assert.ok(at >= 0, `"${line}" missing:\n${out}`);
    assert.deepEqual(
      [...order].sort((a, b) => a.at - b.at).map((o) => o.line),
      order.map((o) => o.line),
      out,
    );

    // `make serve` runs the daemon as its child, which ps and top show as feedsub.
    if (process.platform === 'linux') {
      const daemons = childrenOf(makePid);
      assert.equal(daemons.length, 1, `make's children: ${daemons.join(', ')}`);
      assert.equal(readFileSync(`/proc/${daemons[0]}/comm`, 'utf8').trim(), 'feedsub');
    }

    // SIGTERM to make alone: make passes it to the daemon, which stops cleanly, and then make exits.
    process.kill(makePid, 'SIGTERM');
    await within(closed, 30_000, `make and the daemon exit on SIGTERM:\n${out}`);
    assert.match(out, /"msg":"feedsub: stopped"/, out);
  });
});
