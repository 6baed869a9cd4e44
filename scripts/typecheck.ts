// `npm run lint`'s type check: tsc's diagnostics for the whole project (incremental, its state under build/), and one
// rule tsc does not have: a promise made in src/ is awaited, returned, stored or explicitly let go (`void p`), never
// dropped by a bare statement. A dropped promise runs on unobserved: the work after it does not wait for it, and its
// failure surfaces as an unhandled rejection, which ends the process. With the store asynchronous, a write that is not
// awaited would also leave its transaction's order to chance.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { droppedPromises } from './dropped-promises.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SRC = join(ROOT, 'src');

const configPath = join(ROOT, 'tsconfig.json');
const config = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  },
)!;
const program = ts.createIncrementalProgram({
  rootNames: config.fileNames,
  options: {
    ...config.options,
    incremental: true,
    tsBuildInfoFile: join(ROOT, 'build', 'tsc.tsbuildinfo'),
  },
  configFileParsingDiagnostics: config.errors,
});
const diagnostics = [
  ...program.getConfigFileParsingDiagnostics(),
  ...program.getSyntacticDiagnostics(),
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...program.getSemanticDiagnostics(),
];
program.emit(); // writes the .tsbuildinfo only (noEmit), so the next run checks what changed
const host: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => '\n',
};
if (diagnostics.length > 0)
  process.stderr.write(ts.formatDiagnosticsWithColorAndContext(diagnostics, host));

const dropped = droppedPromises(program.getProgram(), SRC).map((d) => d.slice(ROOT.length));
for (const d of dropped) process.stderr.write(`${d}\n`);
process.exit(diagnostics.length > 0 || dropped.length > 0 ? 1 : 0);
