// The type check's one rule beyond tsc (scripts/typecheck.ts): a promise is never dropped by a bare statement.
import ts from 'typescript';

/** Each expression statement in a file under `dir` whose value is a promise (or another thenable) and which neither
 *  awaits it, nor handles its failure (a chain ending in `.catch(f)` or `.then(f, g)`, as typescript-eslint's
 *  no-floating-promises counts it), nor lets it go with `void`, nor assigns it: "file:line:col: …", file as the program
 *  names it. */
export function droppedPromises(program: ts.Program, dir: string): string[] {
  const checker = program.getTypeChecker();
  const found: string[] = [];
  const isThenable = (type: ts.Type): boolean => {
    if (type.isUnion()) return type.types.some(isThenable);
    const then = type.getProperty('then');
    return then !== undefined && checker.getTypeOfSymbol(then).getCallSignatures().length > 0;
  };
  for (const file of program.getSourceFiles()) {
    if (!file.fileName.startsWith(dir)) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isExpressionStatement(node)) {
        const e = node.expression;
        if (
          !ts.isVoidExpression(e) &&
          !ts.isAwaitExpression(e) &&
          !isAssignment(e) &&
          !isHandled(e) &&
          isThenable(checker.getTypeAtLocation(e))
        ) {
          const { line, character } = file.getLineAndCharacterOfPosition(e.getStart(file));
          found.push(
            `${file.fileName}:${line + 1}:${character + 1}: a promise is dropped: await it, return it, or let it go with \`void\` (and a .catch)`,
          );
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

/** A chain whose last link handles a rejection: `.catch(f)`, `.then(f, g)`, or either followed by `.finally(h)`. */
function isHandled(e: ts.Expression): boolean {
  if (!ts.isCallExpression(e) || !ts.isPropertyAccessExpression(e.expression)) return false;
  const method = e.expression.name.text;
  if (method === 'catch') return e.arguments.length >= 1;
  if (method === 'then') return e.arguments.length >= 2;
  if (method === 'finally') return isHandled(e.expression.expression);
  return false;
}

function isAssignment(e: ts.Expression): boolean {
  return (
    ts.isBinaryExpression(e) &&
    e.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
    e.operatorToken.kind <= ts.SyntaxKind.LastAssignment
  );
}
