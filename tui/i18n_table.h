/* { English, Vietnamese } — included by i18n.c only. UTF-8; keep printf conversions in order. */
{"step", "bước"},
{"run", "chạy"},
{"back", "lùi"},
{"help", "trợ giúp"},
{"quit", "thoát"},
