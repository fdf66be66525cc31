// The peer tokenizer: gpt-3-encoder's own JavaScript GPT-2 encoder on the test corpus and the seed texts.
// Usage: node peer_encode.js PACKAGE_DIR CORPUS_JSON SEEDS_DIR > peer_ids.json
// Output: [{"name", "text", "ids", "decoded"}], texts as read (UTF-8), ids from the peer's encode().
'use strict';
const fs = require('fs');
const path = require('path');
const [pkg, corpusPath, seedsDir] = process.argv.slice(2);
const { encode, decode } = require(path.resolve(pkg, 'Encoder.js'));

const cases = JSON.parse(fs.readFileSync(corpusPath, 'utf-8'));
for (const name of fs.readdirSync(seedsDir).sort()) {
  if (/^0.*\.txt$/.test(name)) cases.push({ name: 'seed ' + name, text: fs.readFileSync(path.join(seedsDir, name), 'utf-8') });
}
const out = cases.map(c => {
  const ids = encode(c.text);
  return { name: c.name, text: c.text, ids, decoded: decode(ids) };
});
process.stdout.write(JSON.stringify(out));
