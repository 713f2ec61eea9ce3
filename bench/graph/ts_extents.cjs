// The extents of definitions in JavaScript/TypeScript files, by the TypeScript compiler's
// own parser: functions, methods, constructors, accessors, classes, and consts bound to a
// function or class. Prints {path: [[name, name line, first line, last line], ...]}
// (1-based) as JSON. Usage: node ts_extents.cjs ROOT PATH...
const fs = require('fs');
const path = require('path');
const ts = require('typescript');

const [root, ...files] = process.argv.slice(2);
const out = {};
for (const file of files) {
  let text;
  try {
    text = fs.readFileSync(path.join(root, file), 'utf8');
  } catch {
    continue;
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = pos => source.getLineAndCharacterOfPosition(pos).line + 1;
  const defs = [];
  const add = (name, node) => {
    if (name) defs.push([name.getText(source), line(name.getStart(source)), line(node.getStart(source)), line(node.getEnd())]);
  };
  const visit = node => {
    if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isClassDeclaration(node) ||
        ts.isGetAccessor(node) || ts.isSetAccessor(node) || ts.isClassExpression(node)) {
      add(node.name, node);
    } else if (ts.isConstructorDeclaration(node)) {
      defs.push(['constructor', line(node.getStart(source)), line(node.getStart(source)), line(node.getEnd())]);
    } else if (ts.isVariableDeclaration(node) && node.initializer &&
        (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer) || ts.isClassExpression(node.initializer))) {
      add(node.name, node);
    } else if (ts.isPropertyAssignment(node) && node.initializer &&
        (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))) {
      add(node.name, node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  out[file] = defs;
}
process.stdout.write(JSON.stringify(out));
