/*
 * names.c -- public names per STYLE §1.1 (laminar_<object>_<verb>) whose
 * implementation still answers to the older name it replaces: each is a
 * plain call, so the old name stays a documented alias (laminar.h) that
 * bindings and users keep calling.
 */
#include "laminar.h"

laminar_code laminar_source_push_watermark(laminar_source* source, int64_t watermark_ms,
                                           laminar_error* err) {
  return laminar_source_watermark(source, watermark_ms, err);
}

laminar_code laminar_source_push_watermark_timeout(laminar_source* source,
                                                   int64_t watermark_ms,
                                                   int64_t timeout_ms,
                                                   laminar_error* err) {
  return laminar_source_watermark_timeout(source, watermark_ms, timeout_ms, err);
}
