/*
 * import.c -- pushed Arrow arrays in: match the pushed schema to the source,
 * validate the array as untrusted input, and compute the lm_vec column views.
 *
 * Validation is nanoarrow's FULL level plus what it leaves out. Reading of
 * nanoarrow 0.9.0 (src/nanoarrow/common/array.c), FULL covers: length/offset
 * >= 0 and no overflow of offset + length; n_buffers and n_children against
 * the type; dictionary present iff the type says so; validity/data/offsets
 * buffers non-NULL where length needs them; first/last offsets >= 0, offsets
 * non-decreasing; struct children at least as long as the struct; dictionary
 * indices in [0, dictionary length) for non-null slots. It does NOT cover, so
 * this file adds:
 *  - shape checks *before* nanoarrow, which reads buffers[i] for every buffer
 *    the type has before comparing n_buffers, and dereferences children[i] and
 *    schema children without NULL checks (a lying producer would crash it);
 *  - null_count against the validity bitmap (nanoarrow trusts it), and
 *    null_count == -1 ("unknown"): computed here; nanoarrow would reject -1
 *    with no bitmap, so it validates a shallow copy carrying the real count;
 *  - UTF-8 validity of utf8/large_utf8 values (skipping null slots, as Arrow
 *    C++ does), including dictionary values;
 *  - alignment of fixed-width, offset and index buffers (reading an int64
 *    through a misaligned pointer is undefined behaviour);
 *  - top-level struct nulls, which a row of columns cannot represent;
 *  - byte sizes: each buffer's slice as offset + length implies it must have
 *    a size that fits int64 (nanoarrow multiplies without overflow checks)
 *    and an address range that does not wrap;
 *  - schema metadata, walked with bounds (nanoarrow's reader trusts every
 *    length word: a garbage blob sends it anywhere);
 *  - a mincore() probe of the slices that end far (PROBE_MIN_BYTES) past
 *    their buffer's start: a range that runs off mapped memory is refused
 *    instead of read.
 * No buffer size is knowable through the C Data Interface, so "short buffer"
 * means a size implied by length/offsets that the declared pointers cannot
 * meet (NULL buffer, child shorter than the struct, offsets past the end, a
 * slice over unmapped pages). A buffer shorter than declared but followed by
 * other mapped memory cannot be told from a right one (laminar.h says so).
 *
 * Column names are matched in O(1) each (name_index), so a push costs time
 * linear in its column count.
 *
 * Struct offset: a non-zero offset of the struct array is honoured (Arrow
 * applies it to the children on top of their own offsets).
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE  // mincore
#endif
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arrow/arrow.h"
#include "arrow/internal.h"
#include "util/util.h"

/* Deepest schema tree walked before nanoarrow parses it (a cycle or absurd
 * nesting is rejected, not recursed into forever). */
#define MAX_SCHEMA_DEPTH 64

/* Largest schema metadata blob accepted (bytes, its length words included).
 * The C Data Interface gives the blob no size: it is walked by its own length
 * words, each checked against this bound before the bytes it claims are read. */
#define MAX_METADATA_BYTES ((int64_t)64 << 20)

/* A buffer's slice that a push implies, when it ends this far or further past
 * the buffer's start, is probed for being mapped before it is read
 * (range_mapped). */
#define PROBE_MIN_BYTES ((int64_t)256 << 10)

/* ------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------- */

/* Set an error about one column: "source 'S': column 'C'<detail>". */
__attribute__((format(printf, 5, 6))) static laminar_code col_error(
    laminar_error* err, laminar_code code, const char* source, const char* column,
    const char* fmt, ...) {
  char detail[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  lm_error_set(err, code, "source '%s': column '%s'%s", source, column, detail);
  lm_error_object(err, source, column);
  return code;
}

/* Set an error about the batch as a whole: "source 'S': <detail>". */
__attribute__((format(printf, 4, 5))) static laminar_code batch_error(
    laminar_error* err, laminar_code code, const char* source, const char* fmt, ...) {
  char detail[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  lm_error_set(err, code, "source '%s': %s", source, detail);
  lm_error_object(err, source, NULL);
  return code;
}

/* A short pyarrow-like name of a parsed Arrow type for messages ("utf8",
 * "timestamp[ms]", "dictionary<values=utf8, indices=int8>"). */
static const char* storage_name(enum ArrowType type) {
  switch (type) {
    case NANOARROW_TYPE_STRING: return "utf8";
    case NANOARROW_TYPE_LARGE_STRING: return "large_utf8";
    default: return ArrowTypeString(type);
  }
}

static void describe_type(const struct ArrowSchemaView* view,
                          const struct ArrowSchemaView* dict_view, char* buf,
                          size_t cap) {
  if (view->type == NANOARROW_TYPE_DICTIONARY) {
    snprintf(buf, cap, "dictionary<values=%s, indices=%s>",
             dict_view != NULL ? storage_name(dict_view->type) : "?",
             storage_name(view->storage_type));
  } else if (view->type == NANOARROW_TYPE_TIMESTAMP) {
    snprintf(buf, cap, "timestamp[%s]", ArrowTimeUnitString(view->time_unit));
  } else if (view->type == NANOARROW_TYPE_DECIMAL128 ||
             view->type == NANOARROW_TYPE_DECIMAL256) {
    snprintf(buf, cap, "%s(%d, %d)", storage_name(view->type),
             (int)view->decimal_precision, (int)view->decimal_scale);
  } else {
    snprintf(buf, cap, "%s", storage_name(view->type));
  }
}

/* ------------------------------------------------------------------------------
 * Checks nanoarrow does not make
 * ---------------------------------------------------------------------------- */

/* True if nanoarrow can walk this schema tree without dereferencing a NULL
 * child (it checks children[i] only one level down). */
static bool schema_tree_ok(const struct ArrowSchema* schema, int depth) {
  if (schema == NULL || schema->release == NULL || depth > MAX_SCHEMA_DEPTH) return false;
  if (schema->n_children < 0) return false;
  if (schema->n_children > 0 && schema->children == NULL) return false;
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (!schema_tree_ok(schema->children[i], depth + 1)) return false;
  }
  return schema->dictionary == NULL || schema_tree_ok(schema->dictionary, depth + 1);
}

/* Schema metadata (CDataInterface "metadata": int32 pair count, then per pair
 * an int32 key length, the key, an int32 value length, the value) walked by
 * its length words with bounds: counts and lengths non-negative and the whole
 * within MAX_METADATA_BYTES, checked before each step, so a malformed blob is
 * refused instead of walked past (nanoarrow's reader trusts every word). */
static bool metadata_ok(const char* metadata, const char* what, char* msg, size_t cap) {
  if (metadata == NULL) return true;
  int32_t pairs;
  memcpy(&pairs, metadata, sizeof pairs);
  if (pairs < 0 || pairs > (MAX_METADATA_BYTES - 4) / 8) {
    snprintf(msg, cap, "%s: malformed metadata: %" PRId32 " key/value pairs", what,
             pairs);
    return false;
  }
  int64_t at = 4;
  for (int32_t i = 0; i < pairs; i++) {
    for (int part = 0; part < 2; part++) {
      int32_t size;
      memcpy(&size, metadata + at, sizeof size);
      /* What is left to walk needs 4 bytes per length word still to come. */
      int64_t words_after = 4 * ((int64_t)(pairs - i - 1) * 2 + (1 - part));
      if (size < 0 || size > MAX_METADATA_BYTES - at - 4 - words_after) {
        snprintf(msg, cap,
                 "%s: malformed metadata: pair %" PRId32 " has a %s of %" PRId32
                 " bytes at byte %" PRId64 " (limit %" PRId64 " bytes in all)",
                 what, i, part == 0 ? "key" : "value", size, at, MAX_METADATA_BYTES);
        return false;
      }
      at += 4 + size;
    }
  }
  return true;
}

/* metadata_ok over a schema tree that schema_tree_ok accepted. */
static bool metadata_tree_ok(const struct ArrowSchema* schema, const char* what,
                             char* msg, size_t cap) {
  if (!metadata_ok(schema->metadata, what, msg, cap)) return false;
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (!metadata_tree_ok(schema->children[i], what, msg, cap)) return false;
  }
  return schema->dictionary == NULL ||
         metadata_tree_ok(schema->dictionary, "dictionary", msg, cap);
}

/* True unless bytes [from, to) past `base` are known not to be mapped: when
 * the range ends PROBE_MIN_BYTES or more past `base`, mincore() must find each
 * of its pages mapped. The C Data Interface carries no buffer sizes, so this
 * is the one check possible that a buffer really spans what its offsets and
 * lengths declare; it catches ranges that run off the mapped address space
 * (which would crash the read), not a short buffer followed by other mapped
 * memory. Ranges near `base` are not probed: a syscall per buffer would cost a
 * wide push of few rows dearly, and one past a long buffer is cheap beside
 * reading it. */
static bool range_mapped(const void* base, int64_t from, int64_t to) {
  if (base == NULL || to < PROBE_MIN_BYTES || to <= from) return true;
  long page_size = sysconf(_SC_PAGESIZE);
  uintptr_t page = page_size > 0 ? (uintptr_t)page_size : 4096;
  uintptr_t start = ((uintptr_t)base + (uintptr_t)from) & ~(page - 1);
  uintptr_t end = (uintptr_t)base + (uintptr_t)to;
  unsigned char vec[4096];
  while (start < end) {
    uintptr_t chunk = end - start;
    if (chunk > sizeof vec * page) chunk = sizeof vec * page;
    if (mincore((void*)start, chunk, vec) != 0) return false;
    start += chunk;
  }
  return true;
}

static int64_t layout_buffers(const struct ArrowLayout* layout) {
  int64_t n = 0;
  for (int i = 0; i < NANOARROW_MAX_FIXED_BUFFERS; i++) {
    if (layout->buffer_type[i] != NANOARROW_BUFFER_TYPE_NONE) n++;
  }
  return n;
}

/* Each buffer's slice, as offset + length implies it, must have a byte size
 * that fits int64 (nanoarrow's and our size arithmetic) and an address range
 * that does not wrap; long ones must be mapped (range_mapped). A utf8 data
 * buffer is sized by its offsets: checked with them (strings_utf8_ok). Needs
 * n_buffers matching the layout and a sane length/offset. */
static bool extents_ok(const struct ArrowArray* a, const struct ArrowLayout* layout,
                       const char* what, char* msg, size_t cap) {
  int64_t end = a->offset + a->length;
  for (int i = 0; i < NANOARROW_MAX_FIXED_BUFFERS; i++) {
    enum ArrowBufferType type = layout->buffer_type[i];
    int64_t bits = layout->element_size_bits[i];
    if (type == NANOARROW_BUFFER_TYPE_NONE || bits <= 0) continue;
    bool offsets = type == NANOARROW_BUFFER_TYPE_DATA_OFFSET;
    if (end > INT64_MAX / bits - (offsets ? 1 : 0)) {
      snprintf(msg, cap,
               "%s: offset %" PRId64 " + length %" PRId64
               " puts buffer %d past any addressable size",
               what, a->offset, a->length, i);
      return false;
    }
    /* Bytes covering elements [offset, end(+1)): n * bits <= INT64_MAX here,
     * rounded up without the "+ 7" that could overflow. */
    int64_t n = end + (offsets ? 1 : 0);
    int64_t from = a->offset * bits / 8;
    int64_t to = n * bits / 8 + (n * bits % 8 != 0);
    if (a->buffers[i] != NULL && (uintptr_t)a->buffers[i] > UINTPTR_MAX - (uint64_t)to) {
      snprintf(msg, cap, "%s: buffer %d of %" PRId64 " bytes wraps the address space",
               what, i, to);
      return false;
    }
    if (!range_mapped(a->buffers[i], from, to)) {
      snprintf(msg, cap,
               "%s: buffer %d is not mapped over the bytes %" PRId64 "..%" PRId64
               " that offset %" PRId64 " + length %" PRId64 " imply",
               what, i, from, to, a->offset, a->length);
      return false;
    }
  }
  return true;
}

/* Shape of one leaf array (a column or a dictionary): what must hold before
 * nanoarrow may read it. Writes a message and returns false on failure. */
static bool leaf_shape_ok(const struct ArrowArray* a, const struct ArrowLayout* layout,
                          bool want_dict, const char* what, char* msg, size_t cap) {
  int64_t nbuf = layout_buffers(layout);
  if (a->n_buffers != nbuf) {
    snprintf(msg, cap, "%s: expected %" PRId64 " buffers but found %" PRId64, what, nbuf,
             a->n_buffers);
    return false;
  }
  if (nbuf > 0 && a->buffers == NULL) {
    snprintf(msg, cap, "%s: buffers array is NULL", what);
    return false;
  }
  if (a->n_children != 0) {
    snprintf(msg, cap, "%s: expected 0 children but found %" PRId64, what, a->n_children);
    return false;
  }
  if (want_dict && a->dictionary == NULL) {
    snprintf(msg, cap, "%s: expected a dictionary but found NULL", what);
    return false;
  }
  if (!want_dict && a->dictionary != NULL) {
    snprintf(msg, cap, "%s: unexpected dictionary member", what);
    return false;
  }
  if (a->length < 0 || a->offset < 0 || a->length > INT64_MAX - a->offset) {
    snprintf(msg, cap, "%s: invalid length %" PRId64 " / offset %" PRId64, what,
             a->length, a->offset);
    return false;
  }
  if (a->null_count < -1 || a->null_count > a->length) {
    snprintf(msg, cap, "%s: invalid null_count %" PRId64 " for length %" PRId64, what,
             a->null_count, a->length);
    return false;
  }
  if (!extents_ok(a, layout, what, msg, cap)) return false;
  /* Alignment: values are read as int32/int64/double through these pointers. */
  for (int i = 1; i < NANOARROW_MAX_FIXED_BUFFERS; i++) {
    int64_t bits = layout->element_size_bits[i];
    enum ArrowBufferType type = layout->buffer_type[i];
    if (type != NANOARROW_BUFFER_TYPE_DATA && type != NANOARROW_BUFFER_TYPE_DATA_OFFSET) {
      continue;
    }
    if (bits < 16 || a->buffers[i] == NULL) continue;
    /* decimal128 values are copied with memcpy (util/types.h): 8 bytes is
     * enough, and all that some producers (Spark's Arrow writer) give */
    uintptr_t align = (uintptr_t)(bits / 8) > 8 ? 8 : (uintptr_t)(bits / 8);
    if ((uintptr_t)a->buffers[i] % align != 0) {
      snprintf(msg, cap, "%s: buffer %d is not aligned to %u bytes", what, i,
               (unsigned)align);
      return false;
    }
  }
  return true;
}

/* Nulls in [offset, offset + length) per the validity bitmap (0 without one).
 * The array's shape has been checked (n_buffers >= 1, sane length/offset). */
static int64_t count_nulls(const struct ArrowArray* a) {
  const uint8_t* validity = (const uint8_t*)a->buffers[0];
  if (validity == NULL || a->length == 0) return 0;
  return a->length - ArrowBitCountSet(validity, a->offset, a->length);
}

/* null_count must be -1 (unknown) or equal what the bitmap says. */
static bool null_count_ok(const struct ArrowArray* a, int64_t actual, const char* what,
                          char* msg, size_t cap) {
  if (a->null_count == -1 || a->null_count == actual) return true;
  if (a->buffers[0] == NULL) {
    snprintf(msg, cap, "%s: null_count is %" PRId64 " but there is no validity bitmap",
             what, a->null_count);
  } else {
    snprintf(msg, cap,
             "%s: null_count is %" PRId64 " but the validity bitmap has %" PRId64
             " nulls",
             what, a->null_count, actual);
  }
  return false;
}


/* UTF-8 of every non-null value of a utf8 ("u") or large_utf8 ("U") array
 * already validated by nanoarrow (offsets monotone and within the data). */
/* Byte span [*start, *end) of element `at` of a utf8 / large_utf8 array whose
 * offsets were validated. */
static inline void value_span(const struct ArrowArray* a, bool large, int64_t at,
                              int64_t* start, int64_t* end) {
  if (large) {
    const int64_t* offsets = (const int64_t*)a->buffers[1];
    *start = offsets[at];
    *end = offsets[at + 1];
  } else {
    const int32_t* offsets = (const int32_t*)a->buffers[1];
    *start = offsets[at];
    *end = offsets[at + 1];
  }
}

/* True when bytes [0, n) are all ASCII, 8 at a time. */
static bool all_ascii(const uint8_t* p, int64_t n) {
  uint64_t acc = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; i++) acc |= p[i];
  return (acc & 0x8080808080808080ULL) == 0;
}

static bool strings_utf8_ok(const struct ArrowArray* a, bool large, const char* what,
                            char* msg, size_t cap) {
  const uint8_t* validity = (const uint8_t*)a->buffers[0];
  const uint8_t* data = (const uint8_t*)a->buffers[2];
  if (a->length == 0) return true;
  /* Fast path: when the whole value range is ASCII every value is valid UTF-8
   * (per-value validation cost ~75 instructions per short string, W1/W2 profile). */
  int64_t first, last, unused;
  value_span(a, large, a->offset, &first, &unused);
  value_span(a, large, a->offset + a->length - 1, &unused, &last);
  if ((uintptr_t)data > UINTPTR_MAX - (uint64_t)last) {
    snprintf(msg, cap, "%s: data buffer of %" PRId64 " bytes wraps the address space",
             what, last);
    return false;
  }
  if (!range_mapped(data, first, last)) {
    snprintf(msg, cap,
             "%s: data buffer is not mapped over the bytes %" PRId64 "..%" PRId64
             " its offsets imply",
             what, first, last);
    return false;
  }
  if (last <= first || all_ascii(data + first, last - first)) return true;
  for (int64_t i = 0; i < a->length; i++) {
    int64_t at = a->offset + i;
    if (validity != NULL && !ArrowBitGet(validity, at)) continue;
    int64_t start, end;
    value_span(a, large, at, &start, &end);
    if (end > start && !lm_utf8_valid(data + start, end - start)) {
      snprintf(msg, cap, "%s: invalid UTF-8 in value %" PRId64, what, i);
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------------------
 * Import
 * ---------------------------------------------------------------------------- */

/* Matching pushed columns to the source's by name, case-insensitive as
 * lm_schema_find, in O(1) per column so a wide push costs linear time: the
 * pushed column at position i is tried against source column i first (the
 * usual order), and on the first miss an open-addressing table of the source's
 * names is built for the rest of the import. */
typedef struct name_index {
  const lm_schema* schema;
  int32_t* slots; /* source column per slot, -1 empty; NULL until a miss */
  uint64_t mask;
} name_index;

static _Thread_local int64_t name_compares;

int64_t lm_arrow_name_compares(void) { return name_compares; }

static bool same_name(const char* a, const char* b) {
  name_compares++;
  return lm_streq_nocase(a, b);
}

static uint64_t name_hash(const char* name) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a over the lower-cased bytes
  for (const unsigned char* p = (const unsigned char*)name; *p != '\0'; p++) {
    h = (h ^ (uint64_t)tolower(*p)) * 1099511628211ULL;
  }
  return h;
}

/* The source column named `name` (-1: none) for the pushed column at `pos`;
 * LAMINAR_ERR_NOMEM if the table cannot be built. */
static laminar_code name_index_find(name_index* ix, int64_t pos, const char* name,
                                    int32_t* out) {
  const lm_schema* schema = ix->schema;
  if (pos < schema->ncols && same_name(schema->fields[pos].name, name)) {
    *out = (int32_t)pos;
    return LAMINAR_OK;
  }
  if (ix->slots == NULL) {
    uint64_t size = 2;
    while (size < 2 * (uint64_t)schema->ncols) size <<= 1;
    ix->slots = lm_malloc(size * sizeof(int32_t));
    if (ix->slots == NULL) return LAMINAR_ERR_NOMEM;
    ix->mask = size - 1;
    memset(ix->slots, 0xff, size * sizeof(int32_t));
    for (int32_t j = 0; j < schema->ncols; j++) {
      uint64_t h = name_hash(schema->fields[j].name) & ix->mask;
      while (ix->slots[h] >= 0) h = (h + 1) & ix->mask;
      ix->slots[h] = j;
    }
  }
  *out = -1;
  for (uint64_t h = name_hash(name) & ix->mask; ix->slots[h] >= 0;
       h = (h + 1) & ix->mask) {
    if (same_name(schema->fields[ix->slots[h]].name, name)) {
      *out = ix->slots[h];
      break;
    }
  }
  return LAMINAR_OK;
}

/* Per source column scratch, freed when the import returns. */
typedef struct import_col {
  int64_t child;              /* index in the pushed struct, -1 until matched */
  struct ArrowSchemaView sv;  /* the pushed column's type */
  struct ArrowSchemaView dsv; /* its dictionary's value type (if encoded) */
  int64_t nulls, dict_nulls;  /* computed over each array's whole range */
} import_col;

static bool type_fits(lm_type want, const import_col* c) {
  const struct ArrowSchemaView* v = &c->sv;
  switch (lm_type_kind(want)) {
    case LM_TYPE_BOOL: return v->type == NANOARROW_TYPE_BOOL;
    case LM_TYPE_INT32: return v->type == NANOARROW_TYPE_INT32;
    case LM_TYPE_INT64: return v->type == NANOARROW_TYPE_INT64;
    case LM_TYPE_DOUBLE: return v->type == NANOARROW_TYPE_DOUBLE;
    case LM_TYPE_TIMESTAMP: return v->type == NANOARROW_TYPE_TIMESTAMP;
    case LM_TYPE_DATE: return v->type == NANOARROW_TYPE_DATE32;
    case LM_TYPE_INT16: return v->type == NANOARROW_TYPE_INT16;
    case LM_TYPE_FLOAT: return v->type == NANOARROW_TYPE_FLOAT;
    case LM_TYPE_TIME:
      return v->type == NANOARROW_TYPE_TIME64 &&
             v->time_unit == NANOARROW_TIME_UNIT_MICRO;
    case LM_TYPE_BINARY:
      return v->type == NANOARROW_TYPE_BINARY || v->type == NANOARROW_TYPE_LARGE_BINARY;
    case LM_TYPE_INT8: return v->type == NANOARROW_TYPE_INT8;
    case LM_TYPE_STRING:
      if (v->type == NANOARROW_TYPE_STRING || v->type == NANOARROW_TYPE_LARGE_STRING) {
        return true;
      }
      return v->type == NANOARROW_TYPE_DICTIONARY &&
             v->storage_type == NANOARROW_TYPE_INT32 &&
             (c->dsv.type == NANOARROW_TYPE_STRING ||
              c->dsv.type == NANOARROW_TYPE_LARGE_STRING);
    case LM_TYPE_DECIMAL: /* decimal128 of the column's precision and scale */
      return v->type == NANOARROW_TYPE_DECIMAL128 &&
             v->decimal_precision == lm_type_precision(want) &&
             v->decimal_scale == lm_type_scale(want);
    case LM_TYPE_NULL: return false;
  }
  return false;
}

/* Checks of the top-level struct array itself (its columns come later). */
static laminar_code check_struct(const struct ArrowArray* array, int64_t ncols,
                                 const char* src, laminar_error* err) {
  if (array->n_buffers != 1 || array->buffers == NULL) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "struct array: expected 1 buffer but found %" PRId64,
                       array->n_buffers);
  }
  if (array->n_children != ncols || (ncols > 0 && array->children == NULL)) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "struct array: schema has %" PRId64
                       " children but the array has %" PRId64,
                       ncols, array->n_children);
  }
  for (int64_t i = 0; i < ncols; i++) {
    if (array->children[i] == NULL) {
      return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                         "struct array: child %" PRId64 " is NULL", i);
    }
  }
  if (array->dictionary != NULL) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "struct array: unexpected dictionary member");
  }
  if (array->length < 0 || array->offset < 0 ||
      array->length > INT64_MAX - array->offset || array->null_count < -1) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "struct array: invalid length %" PRId64 " / offset %" PRId64
                       " / null_count %" PRId64,
                       array->length, array->offset, array->null_count);
  }
  char msg[512];
  struct ArrowLayout layout;
  ArrowLayoutInit(&layout, NANOARROW_TYPE_STRUCT);
  if (!extents_ok(array, &layout, "struct array", msg, sizeof msg)) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src, "%s", msg);
  }
  int64_t nulls = count_nulls(array);
  if (!null_count_ok(array, nulls, "struct array", msg, sizeof msg)) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src, "%s", msg);
  }
  if (nulls > 0) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "the struct array has %" PRId64
                       " top-level null rows; a pushed "
                       "batch must put its nulls in the columns",
                       nulls);
  }
  return LAMINAR_OK;
}

/* Checks of one column (and its dictionary) that need the array; on success
 * c->nulls/dict_nulls are exact and nanoarrow FULL validation has passed. */
static laminar_code check_column(import_col* c, const struct ArrowArray* parent,
                                 const struct ArrowSchema* col_schema, const char* src,
                                 const char* name, laminar_error* err) {
  const struct ArrowArray* child = parent->children[c->child];
  bool encoded = c->sv.type == NANOARROW_TYPE_DICTIONARY;
  char msg[512];
  if (!leaf_shape_ok(child, &c->sv.layout, encoded, "array", msg, sizeof msg)) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
  }
  if (encoded && !leaf_shape_ok(child->dictionary, &c->dsv.layout, false, "dictionary",
                                msg, sizeof msg)) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
  }
  if (child->length < parent->offset + parent->length) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name,
                     ": length %" PRId64
                     " is shorter than the struct's offset + length %" PRId64,
                     child->length, parent->offset + parent->length);
  }
  c->nulls = count_nulls(child);
  if (!null_count_ok(child, c->nulls, "array", msg, sizeof msg)) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
  }
  /* nanoarrow validates a shallow copy whose null_count is made exact. The
   * copies and the view live for this column's check only, so a wide push
   * keeps one column's worth of them, not one per column. */
  struct ArrowArray copy = *child;
  struct ArrowArray dict_copy;
  copy.null_count = c->nulls;
  if (encoded) {
    c->dict_nulls = count_nulls(child->dictionary);
    if (!null_count_ok(child->dictionary, c->dict_nulls, "dictionary", msg, sizeof msg)) {
      return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
    }
    dict_copy = *child->dictionary;
    dict_copy.null_count = c->dict_nulls;
    copy.dictionary = &dict_copy;
  }

  struct ArrowError na;
  na.message[0] = '\0';
  struct ArrowArrayView view;
  if (ArrowArrayViewInitFromSchema(&view, col_schema, &na) != NANOARROW_OK) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", na.message);
  }
  bool valid =
      ArrowArrayViewSetArray(&view, &copy, &na) == NANOARROW_OK &&
      ArrowArrayViewValidate(&view, NANOARROW_VALIDATION_LEVEL_FULL, &na) == NANOARROW_OK;
  ArrowArrayViewReset(&view);
  if (!valid) {
    return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", na.message);
  }

  const struct ArrowArray* strings = encoded ? child->dictionary : child;
  enum ArrowType st = encoded ? c->dsv.type : c->sv.type;
  if (st == NANOARROW_TYPE_STRING || st == NANOARROW_TYPE_LARGE_STRING) {
    if (!strings_utf8_ok(strings, st == NANOARROW_TYPE_LARGE_STRING,
                         encoded ? "dictionary" : "array", msg, sizeof msg)) {
      return col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
    }
  }
  return LAMINAR_OK;
}

struct lm_arrow_kept {
  atomic_int refs;         /* kept itself, and the batches sharing the array */
  struct ArrowArray array; /* the producer's once shared (released: not shared) */
  lm_arrow_colsrc* cols;   /* import's, borrowing the array's children */
  int32_t ncols;
};

static void kept_unref(lm_arrow_kept* k) {
  /* acq_rel: as lm_batch_unref (the last one frees after every holder's reads). */
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1) return;
  lm_arrow_release(&k->array); /* a no-op unless shared */
  lm_free(k->cols);
  lm_free(k);
}

static void kept_proxy_release(struct ArrowArray* a) {
  lm_arrow_kept* k = a->private_data;
  a->release = NULL;
  kept_unref(k);
}

/* A struct array standing for the kept one: its length, offset, buffers,
 * children and dictionary, and a reference of its own. */
static void kept_proxy(lm_arrow_kept* k, struct ArrowArray* out) {
  atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
  *out = k->array;
  out->private_data = k;
  out->release = kept_proxy_release;
}

void lm_arrow_kept_share(lm_arrow_kept* k, lm_batch* batch) {
  assert(k->array.release == NULL);
  /* The children (which the column sources point at) stay where they are:
   * only the top-level struct moves. */
  lm_arrow_move(&batch->array, &k->array);
  kept_proxy(k, &batch->array);
}

void lm_arrow_kept_unshare(lm_arrow_kept* k, lm_batch* batch) {
  assert(k->array.release != NULL && batch->array.private_data == k &&
         atomic_load_explicit(&k->refs, memory_order_relaxed) == 2);
  batch->array.release = NULL; /* the proxy's reference, dropped by hand */
  lm_arrow_move(&k->array, &batch->array);
  atomic_store_explicit(&k->refs, 1, memory_order_relaxed);
}

laminar_code lm_arrow_kept_view(lm_arrow_kept* k, lm_batch** out, laminar_error* err) {
  assert(k->array.release != NULL);
  struct ArrowArray proxy;
  kept_proxy(k, &proxy);
  /* Import checked these very values: only memory can fail here. */
  laminar_code rc = lm_arrow_wrap(&proxy, k->cols, k->ncols, proxy.length, "", out, err);
  if (rc != LAMINAR_OK) lm_arrow_release(&proxy);
  return rc;
}

void lm_arrow_kept_free(lm_arrow_kept* k) {
  if (k != NULL) kept_unref(k);
}

static laminar_code import(const lm_schema* source_schema, const char* source_name,
                           struct ArrowArray* array, const struct ArrowSchema* schema,
                           lm_batch** out, lm_arrow_kept** kept, laminar_error* err);

laminar_code lm_arrow_import(const lm_schema* source_schema, const char* source_name,
                             struct ArrowArray* array, const struct ArrowSchema* schema,
                             lm_batch** out, laminar_error* err) {
  return import(source_schema, source_name, array, schema, out, NULL, err);
}

laminar_code lm_arrow_import_kept(const lm_schema* source_schema, const char* source_name,
                                  struct ArrowArray* array,
                                  const struct ArrowSchema* schema, lm_batch** out,
                                  lm_arrow_kept** kept, laminar_error* err) {
  *kept = NULL;
  return import(source_schema, source_name, array, schema, out, kept, err);
}

static laminar_code import(const lm_schema* source_schema, const char* source_name,
                           struct ArrowArray* array, const struct ArrowSchema* schema,
                           lm_batch** out, lm_arrow_kept** kept, laminar_error* err) {
  const char* src = source_name != NULL ? source_name : "";
  if (out != NULL) *out = NULL;
  if (source_schema == NULL || array == NULL || schema == NULL || out == NULL) {
    return lm_error_set(err, LAMINAR_ERR_MISUSE, "lm_arrow_import: NULL argument");
  }
  if (array->release == NULL) {
    return batch_error(err, LAMINAR_ERR_ARROW_RELEASED, src,
                       "the pushed array is released");
  }
  if (schema->release == NULL) {
    return batch_error(err, LAMINAR_ERR_ARROW_RELEASED, src,
                       "the pushed schema is released");
  }

  /* The schema: a struct nanoarrow can parse, every column parseable. */
  struct ArrowError na;
  na.message[0] = '\0';
  struct ArrowSchemaView top;
  if (!schema_tree_ok(schema, 0)) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "the pushed schema has NULL, released or cyclic children");
  }
  char msg[512];
  if (!metadata_ok(schema->metadata, "pushed schema", msg, sizeof msg)) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src, "%s", msg);
  }
  if (ArrowSchemaViewInit(&top, schema, &na) != NANOARROW_OK) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src, "pushed schema: %s",
                       na.message);
  }
  if (top.type != NANOARROW_TYPE_STRUCT) {
    return batch_error(err, LAMINAR_ERR_ARROW_INVALID, src,
                       "the pushed schema must be a struct (\"+s\") but has format '%s'",
                       schema->format);
  }

  int32_t ncols = source_schema->ncols;
  int64_t nchildren = schema->n_children;
  laminar_code rc = LAMINAR_OK;
  name_index names = {source_schema, NULL, 0};
  import_col* cols = lm_calloc((size_t)ncols, sizeof(import_col));
  lm_arrow_colsrc* srcs = lm_calloc((size_t)ncols, sizeof(lm_arrow_colsrc));
  if (cols == NULL || srcs == NULL) {
    rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory importing a batch");
    goto done;
  }
  for (int32_t j = 0; j < ncols; j++) cols[j].child = -1;

  /* Parse every pushed column, then match names (case-insensitive). */
  for (int64_t i = 0; i < nchildren; i++) {
    const struct ArrowSchema* cs = schema->children[i];
    const char* name = cs->name != NULL ? cs->name : "";
    struct ArrowSchemaView sv, dsv;
    if (!metadata_tree_ok(cs, "schema", msg, sizeof msg)) {
      rc = col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", msg);
      goto done;
    }
    if (ArrowSchemaViewInit(&sv, cs, &na) != NANOARROW_OK ||
        (cs->dictionary != NULL &&
         ArrowSchemaViewInit(&dsv, cs->dictionary, &na) != NANOARROW_OK)) {
      rc = col_error(err, LAMINAR_ERR_ARROW_INVALID, src, name, ": %s", na.message);
      goto done;
    }
    int32_t j;
    if (name_index_find(&names, i, name, &j) != LAMINAR_OK) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory importing a batch");
      goto done;
    }
    if (j < 0) {
      rc = col_error(err, LAMINAR_ERR_SCHEMA_MISMATCH, src, name,
                     " is not a column of the source");
      goto done;
    }
    if (cols[j].child >= 0) {
      rc = col_error(err, LAMINAR_ERR_SCHEMA_MISMATCH, src, source_schema->fields[j].name,
                     " appears more than once in the pushed batch");
      goto done;
    }
    cols[j].child = i;
    cols[j].sv = sv;
    if (cs->dictionary != NULL) cols[j].dsv = dsv;
  }
  for (int32_t j = 0; j < ncols; j++) {
    if (cols[j].child < 0) {
      rc = col_error(err, LAMINAR_ERR_SCHEMA_MISMATCH, src, source_schema->fields[j].name,
                     " is missing from the pushed batch");
      goto done;
    }
  }

  /* Types, in source order. */
  for (int32_t j = 0; j < ncols; j++) {
    const lm_field* f = &source_schema->fields[j];
    if (!type_fits(f->type, &cols[j])) {
      char got[128];
      describe_type(&cols[j].sv,
                    cols[j].sv.type == NANOARROW_TYPE_DICTIONARY ? &cols[j].dsv : NULL,
                    got, sizeof got);
      rc = col_error(err, LAMINAR_ERR_COLUMN_TYPE, src, f->name, " expects %s, got %s",
                     lm_type_name(f->type), got);
      goto done;
    }
  }

  /* The array: the struct, then each column. */
  rc = check_struct(array, nchildren, src, err);
  if (rc != LAMINAR_OK) goto done;
  for (int32_t j = 0; j < ncols; j++) {
    rc = check_column(&cols[j], array, schema->children[cols[j].child], src,
                      source_schema->fields[j].name, err);
    if (rc != LAMINAR_OK) goto done;
  }

  /* Views. */
  for (int32_t j = 0; j < ncols; j++) {
    const import_col* c = &cols[j];
    const struct ArrowArray* child = array->children[c->child];
    lm_arrow_colsrc* s = &srcs[j];
    s->name = source_schema->fields[j].name;
    s->type = source_schema->fields[j].type;
    s->not_null = source_schema->fields[j].not_null;
    s->array = child;
    s->offset = child->offset + array->offset;
    s->storage = c->sv.storage_type;
    s->unit = c->sv.time_unit;
    s->may_have_nulls = c->nulls > 0;
    if (c->sv.type == NANOARROW_TYPE_DICTIONARY) {
      s->dict = child->dictionary;
      s->dict_storage = c->dsv.type;
      s->dict_may_have_nulls = c->dict_nulls > 0;
    }
  }
  /* Allocated before the wrap, which moves the array: nothing to undo after. */
  lm_arrow_kept* k = NULL;
  if (kept != NULL) {
    k = lm_calloc(1, sizeof *k);
    if (k == NULL) {
      rc = lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory importing a batch");
      goto done;
    }
  }
  rc = lm_arrow_wrap(array, srcs, ncols, array->length, src, out, err);
  if (k != NULL) {
    if (rc != LAMINAR_OK) {
      lm_free(k);
      goto done;
    }
    /* The names are the source's, which may be dropped before the writer
     * looks again; only error messages use them, and those cannot recur. */
    for (int32_t j = 0; j < ncols; j++) srcs[j].name = "";
    atomic_init(&k->refs, 1);
    k->cols = srcs;
    k->ncols = ncols;
    srcs = NULL;
    *kept = k;
  }

done:
  lm_free(cols);
  lm_free(srcs);
  lm_free(names.slots);
  return rc;
}

/* ------------------------------------------------------------------------------
 * Column views (shared with lm_arrow_build)
 * ---------------------------------------------------------------------------- */

#define REGION_ALIGN ((size_t)LM_CACHELINE)

/* Reserve `count` items of `width` bytes at *total (cache-line aligned); false
 * on size_t overflow. Returns the region's offset through *at. */
static bool reserve_region(size_t* total, int64_t count, size_t width, size_t* at) {
  size_t bytes;
  if (count < 0 || (uint64_t)count > SIZE_MAX ||
      __builtin_mul_overflow((size_t)count, width, &bytes)) {
    return false;
  }
  size_t start = (*total + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
  if (start < *total || __builtin_add_overflow(start, bytes, total)) return false;
  *at = start;
  return true;
}

/* Bytes of converted data a column's view needs (0 when viewed in place). */
static size_t converted_width(const lm_arrow_colsrc* c) {
  switch (c->type) {
    case LM_TYPE_BOOL: return 1;
    case LM_TYPE_STRING:
    case LM_TYPE_BINARY: return sizeof(lm_str);
    case LM_TYPE_TIMESTAMP: return c->unit == NANOARROW_TIME_UNIT_MICRO ? 0 : 8;
    case LM_TYPE_NULL: return 1;  // zeroed placeholders, so data is never NULL
    default: return lm_type_is_decimal(c->type) && !lm_type_is_wide(c->type) ? 8 : 0;
  }
}

static bool needs_nulls(const lm_arrow_colsrc* c) {
  return c->type == LM_TYPE_NULL || c->may_have_nulls ||
         (c->dict != NULL && c->dict_may_have_nulls);
}

/* Lay out (when base == NULL: only size) the batch header, cols array and each
 * column's nulls and data regions. */
static bool plan_layout(const lm_arrow_colsrc* cols, int32_t ncols, int64_t nrows,
                        size_t* total, size_t* nulls_at, size_t* data_at) {
  size_t at;
  *total = 0;
  if (!reserve_region(total, 1, sizeof(lm_batch), &at)) return false;
  if (!reserve_region(total, ncols, sizeof(lm_vec), &at)) return false;
  for (int32_t i = 0; i < ncols; i++) {
    size_t n = 0, d = 0;
    if (needs_nulls(&cols[i]) && !reserve_region(total, nrows, 1, &n)) return false;
    size_t w = converted_width(&cols[i]);
    if (w > 0 && !reserve_region(total, nrows, w, &d)) return false;
    if (nulls_at != NULL) nulls_at[i] = n;
    if (data_at != NULL) data_at[i] = d;
  }
  return true;
}

static const void* buffer_at(const void* buffer, int64_t offset, int64_t width) {
  if (buffer == NULL) return NULL;
  return (const uint8_t*)buffer + offset * width;
}

/* Whether a utf8 / binary storage type has 64-bit offsets. */
static bool large_offsets(enum ArrowType storage) {
  return storage == NANOARROW_TYPE_LARGE_STRING || storage == NANOARROW_TYPE_LARGE_BINARY;
}

/* The string at element `at` of a (large) utf8 or binary array. */
static lm_str string_at(const struct ArrowArray* a, enum ArrowType storage, int64_t at) {
  const char* data = (const char*)a->buffers[2];
  int64_t start, end;
  value_span(a, large_offsets(storage), at, &start, &end);
  lm_str s = {data != NULL ? data + start : NULL, end - start};
  return s;
}

/* Fill one column's view. `nulls` (nrows bytes, or NULL when the column cannot
 * have nulls) and `conv` (converted data, or NULL) are the column's regions. */
static laminar_code fill_column(const lm_arrow_colsrc* c, int64_t nrows, uint8_t* nulls,
                                void* conv, lm_vec* v, const char* src,
                                laminar_error* err) {
  const struct ArrowArray* a = c->array;
  int64_t off = c->offset;
  v->type = c->type;
  v->len = nrows;
  v->nulls = NULL;
  v->data = NULL;

  if (c->type == LM_TYPE_NULL) {
    memset(nulls, 1, (size_t)nrows);  // an Arrow null ("n") array: every row NULL
  } else if (nulls != NULL) {
    const uint8_t* validity = c->may_have_nulls ? (const uint8_t*)a->buffers[0] : NULL;
    for (int64_t r = 0; r < nrows; r++) {
      nulls[r] = validity != NULL && !ArrowBitGet(validity, off + r);
    }
  }

  switch (lm_type_kind(c->type)) {
    case LM_TYPE_DECIMAL: {
      /* decimal128 values, checked to fit the precision (Arrow does not
       * promise it); up to 18 digits narrowed to int64 (util/types.h) */
      const uint8_t* in = buffer_at(a->buffers[1], off, 16);
      int32_t prec = lm_type_precision(c->type);
      lm_i128 lim = 1;
      for (int32_t i = 0; i < prec; i++) lim *= 10;
      for (int64_t r = 0; r < nrows; r++) {
        lm_i128 x = 0;
        if (!(nulls != NULL && nulls[r])) memcpy(&x, in + 16 * r, 16);
        if (x >= lim || x <= -lim) {
          return col_error(err, LAMINAR_ERR_COLUMN_TYPE, src, c->name,
                           ": the value at row %" PRId64
                           " has more than %d digits, "
                           "past its type %s",
                           r, (int)prec, lm_type_name(c->type));
        }
        if (conv != NULL) ((int64_t*)conv)[r] = (int64_t)x;
      }
      v->data = conv != NULL ? conv : (const void*)in;
      break;
    }
    case LM_TYPE_BOOL: {
      uint8_t* out = conv;
      const uint8_t* bits = (const uint8_t*)a->buffers[1];
      for (int64_t r = 0; r < nrows; r++) out[r] = (uint8_t)ArrowBitGet(bits, off + r);
      v->data = out;
      break;
    }
    case LM_TYPE_INT32:
    case LM_TYPE_DATE: v->data = buffer_at(a->buffers[1], off, 4); break;
    case LM_TYPE_INT16: v->data = buffer_at(a->buffers[1], off, 2); break;
    case LM_TYPE_FLOAT: v->data = buffer_at(a->buffers[1], off, 4); break;
    case LM_TYPE_TIME: v->data = buffer_at(a->buffers[1], off, 8); break;
    case LM_TYPE_INT8: v->data = buffer_at(a->buffers[1], off, 1); break;
    case LM_TYPE_INT64:
    case LM_TYPE_DOUBLE: v->data = buffer_at(a->buffers[1], off, 8); break;
    case LM_TYPE_TIMESTAMP: {
      const int64_t* in = buffer_at(a->buffers[1], off, 8);
      if (c->unit == NANOARROW_TIME_UNIT_MICRO) {
        v->data = in;
        break;
      }
      int64_t* out = conv;
      int64_t scale = c->unit == NANOARROW_TIME_UNIT_SECOND  ? 1000000
                      : c->unit == NANOARROW_TIME_UNIT_MILLI ? 1000
                                                             : 0;  // 0: nanoseconds
      for (int64_t r = 0; r < nrows; r++) {
        if (nulls != NULL && nulls[r]) {
          out[r] = 0;
          continue;
        }
        int64_t x = in[r];
        if (scale == 0) {
          int64_t q = x / 1000;  // floor division: toward -inf, not zero
          if (x % 1000 < 0) q--;
          out[r] = q;
        } else if (__builtin_mul_overflow(x, scale, &out[r])) {
          return col_error(err, LAMINAR_ERR_COLUMN_TYPE, src, c->name,
                           ": timestamp %" PRId64 " (%s) at row %" PRId64
                           " overflows TIMESTAMP microseconds",
                           x, ArrowTimeUnitString(c->unit), r);
        }
      }
      v->data = out;
      break;
    }
    case LM_TYPE_BINARY: /* never dictionary-encoded (type_fits) */
    case LM_TYPE_STRING: {
      lm_str* out = conv;
      if (c->dict == NULL) {
        for (int64_t r = 0; r < nrows; r++) out[r] = string_at(a, c->storage, off + r);
      } else {
        const struct ArrowArray* d = c->dict;
        const int32_t* idx = buffer_at(a->buffers[1], off, 4);
        const uint8_t* dvalid =
            c->dict_may_have_nulls ? (const uint8_t*)d->buffers[0] : NULL;
        for (int64_t r = 0; r < nrows; r++) {
          lm_str empty = {NULL, 0};
          if (nulls != NULL && nulls[r]) {
            out[r] = empty;  // a null slot's index may be anything: never follow it
            continue;
          }
          int64_t at = d->offset + idx[r];  // in range: nanoarrow FULL checked it
          if (dvalid != NULL && !ArrowBitGet(dvalid, at)) {
            nulls[r] = 1;  // a null dictionary value is a null row
            out[r] = empty;
            continue;
          }
          out[r] = string_at(d, c->dict_storage, at);
        }
      }
      v->data = out;
      break;
    }
    case LM_TYPE_NULL:
      memset(conv, 0, (size_t)nrows);
      v->data = conv;
      break;
  }

  if (nulls != NULL) {
    int64_t count = 0;
    int64_t first = -1;
    for (int64_t r = 0; r < nrows; r++) {
      if (nulls[r] && first < 0) first = r;
      count += nulls[r];
    }
    if (count > 0 && c->not_null) {
      return col_error(err, LAMINAR_ERR_NULL_VIOLATION, src, c->name,
                       " is NOT NULL but row %" PRId64 " is NULL", first);
    }
    if (count > 0) v->nulls = nulls;
  }
  return LAMINAR_OK;
}


/* The bytes of string values rows offset .. offset + n of a (large) utf8
 * array hold: the span of its offsets (validated before), O(1). */
static int64_t string_bytes(const struct ArrowArray* a, enum ArrowType storage,
                            int64_t offset, int64_t n) {
  if (a == NULL || a->n_buffers < 3 || a->buffers[1] == NULL || n <= 0) return 0;
  if (large_offsets(storage)) {
    const int64_t* off = a->buffers[1];
    return off[offset + n] - off[offset];
  }
  const int32_t* off = a->buffers[1];
  return (int64_t)off[offset + n] - off[offset];
}

/* lm_batch.bytes: values and null bytes of every column, and the string
 * bytes a string column refers to (a dictionary's: its values). */
static int64_t batch_bytes(const lm_arrow_colsrc* src, const lm_vec* cols, int32_t ncols,
                           int64_t nrows) {
  int64_t total = 0;
  for (int32_t c = 0; c < ncols; c++) {
    total += nrows * lm_type_width(cols[c].type) + (cols[c].nulls != NULL ? nrows : 0);
    if (!lm_type_is_bytes(cols[c].type)) continue;
    total += src[c].dict != NULL
                 ? string_bytes(src[c].dict, src[c].dict_storage, src[c].dict->offset,
                                src[c].dict->length)
                 : string_bytes(src[c].array, src[c].storage, src[c].offset, nrows);
  }
  return total;
}

laminar_code lm_arrow_wrap(struct ArrowArray* array, const lm_arrow_colsrc* cols,
                           int32_t ncols, int64_t nrows, const char* source_name,
                           lm_batch** out, laminar_error* err) {
  const char* src = source_name != NULL ? source_name : "";
  *out = NULL;
  size_t total;
  size_t* at = lm_calloc((size_t)ncols * 2, sizeof(size_t));
  if (at == NULL || !plan_layout(cols, ncols, nrows, &total, at, at + ncols)) {
    lm_free(at);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory viewing a batch");
  }
  /* Not zeroed: every byte read is written below (the header, the views,
   * each column's nulls and data regions, whole). A pass less over the
   * region, which is most of a batch's memory traffic here. */
  uint8_t* mem = lm_malloc_aligned(LM_CACHELINE, total);
  if (mem == NULL) {
    lm_free(at);
    return lm_error_set(err, LAMINAR_ERR_NOMEM, "out of memory viewing a batch");
  }
  lm_batch* batch = (lm_batch*)mem;
  size_t cols_at = (sizeof(lm_batch) + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
  lm_vec* vecs = (lm_vec*)(mem + cols_at);
  for (int32_t i = 0; i < ncols; i++) {
    uint8_t* nulls = needs_nulls(&cols[i]) ? mem + at[i] : NULL;
    void* conv = converted_width(&cols[i]) > 0 ? mem + at[ncols + i] : NULL;
    laminar_code rc = fill_column(&cols[i], nrows, nulls, conv, &vecs[i], src, err);
    if (rc != LAMINAR_OK) {
      lm_free(mem);
      lm_free(at);
      return rc;
    }
  }
  lm_free(at);
  atomic_init(&batch->refs, 1);
  batch->bytes = batch_bytes(cols, vecs, ncols, nrows);
  batch->nrows = nrows;
  batch->ncols = ncols;
  batch->cols = vecs;
  batch->owned = mem;
  lm_arrow_move(array, &batch->array);
  *out = batch;
  return LAMINAR_OK;
}
