// Print a SCIP index's occurrences of project symbols, one JSON object per line:
// {path, line, col, end, def, symbol, enc} (0-based lines and columns, as SCIP has them;
// enc: the definition's whole extent [first line, last line] when the indexer gives it).
// Usage: node scip_dump.cjs INDEX.scip
const fs = require('fs');
const { scip } = require('@sourcegraph/scip-typescript/dist/src/scip.js');

const index = scip.Index.deserializeBinary(fs.readFileSync(process.argv[2]));
const out = [];
for (const doc of index.documents) {
  for (const occ of doc.occurrences) {
    const symbol = occ.symbol;
    if (!symbol || symbol.startsWith('local ')) continue;
    const [line, col, a, b] = occ.range;
    // A three-element range is on one line: [line, start, end].
    const end = occ.range.length === 3 ? a : b;
    const e = occ.enclosing_range || [];
    const enc = e.length === 3 ? [e[0], e[0]] : e.length === 4 ? [e[0], e[2]] : null;
    out.push(JSON.stringify({ path: doc.relative_path, line, col, end, def: (occ.symbol_roles & 1) === 1, symbol, enc }));
  }
}
process.stdout.write(out.join('\n') + '\n');
