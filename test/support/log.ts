// A logger for tests that keeps every line it is given, at every level, with the fields of the children it made.
import type { Logger, LogFields } from '../../src/log.ts';

export type Line = { level: string; msg: string; fields: LogFields };

/** Records into `lines` (returned), showing each line to `onLine` as it is written. */
export function recordingLogger(
  onLine: (line: Line) => void = () => {},
  lines: Line[] = [],
  base: LogFields = {},
): { logger: Logger; lines: Line[] } {
  const at =
    (level: string) =>
    (msg: string, fields: LogFields = {}) => {
      const line = { level, msg, fields: { ...base, ...fields } };
      lines.push(line);
      onLine(line);
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => recordingLogger(onLine, lines, { ...base, ...fields }).logger,
  };
  return { logger, lines };
}
