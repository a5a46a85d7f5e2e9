/*
 * crc32c.c -- CRC-32C with the SSE4.2 instruction where present, else a table.
 * Buffers of 768 bytes and more run as three interleaved chains (issue 6: the
 * WAL checksums every logged byte on the pushing thread).
 */
#include "store/crc32c.h"

#include <string.h>

#include "store/crc32c_shift.h"
#include "store/crc32c_table.h"

uint32_t lm_crc32c_portable(uint32_t crc, const void* p, size_t n) {
  const uint8_t* b = p;
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; i++) c = lm_crc32c_table[(c ^ b[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LM_CRC32C_X86 1

/* Shift a register over `len` zero bytes, len being the block length the
 * table `t` was made for (crc32c_shift.h). */
static uint32_t shift(const uint32_t t[4][256], uint32_t c) {
  return t[0][c & 0xFFu] ^ t[1][(c >> 8) & 0xFFu] ^ t[2][(c >> 16) & 0xFFu] ^
         t[3][c >> 24];
}

/* One chain of crc32 instructions over n bytes (a multiple of 8). */
__attribute__((target("sse4.2"))) static inline uint64_t chain(uint64_t c,
                                                               const uint8_t* b,
                                                               size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word;
    memcpy(&word, b + i, 8); /* unaligned-safe load; compiles to one mov */
    c = __builtin_ia32_crc32di(c, word);
  }
  return c;
}

/* Three blocks of `len` bytes at b as three independent chains, joined: the
 * crc32 instruction has a latency of ~3 cycles and a throughput of one a
 * cycle, so one chain (8 bytes at a time, each waiting for the last) leaves
 * two thirds of it idle. The register after A|B|C is
 * shift(shift(crc(c, A)) ^ crc(0, B)) ^ crc(0, C): the CRC is linear. */
__attribute__((target("sse4.2"))) static inline uint64_t three(uint64_t c,
                                                               const uint8_t* b,
                                                               size_t len,
                                                               const uint32_t t[4][256]) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t w0, w1, w2;
    memcpy(&w0, b + i, 8);
    memcpy(&w1, b + len + i, 8);
    memcpy(&w2, b + 2 * len + i, 8);
    c = __builtin_ia32_crc32di(c, w0);
    c1 = __builtin_ia32_crc32di(c1, w1);
    c2 = __builtin_ia32_crc32di(c2, w2);
  }
  uint32_t ab = shift(t, (uint32_t)c) ^ (uint32_t)c1;
  return shift(t, ab) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc,
                                                               const void* p, size_t n) {
  const uint8_t* b = p;
  uint64_t c = (uint32_t)~crc;
  while (n >= 3 * LM_CRC32C_LONG) {
    c = three(c, b, LM_CRC32C_LONG, lm_crc32c_shift_long);
    b += 3 * LM_CRC32C_LONG;
    n -= 3 * LM_CRC32C_LONG;
  }
  while (n >= 3 * LM_CRC32C_SHORT) {
    c = three(c, b, LM_CRC32C_SHORT, lm_crc32c_shift_short);
    b += 3 * LM_CRC32C_SHORT;
    n -= 3 * LM_CRC32C_SHORT;
  }
  size_t words = n & ~(size_t)7;
  c = chain(c, b, words);
  b += words;
  n -= words;
  uint32_t c32 = (uint32_t)c;
  while (n > 0) {
    c32 = __builtin_ia32_crc32qi(c32, *b++);
    n--;
  }
  return ~c32;
}
#endif

int lm_crc32c_hardware(void) {
#ifdef LM_CRC32C_X86
  return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
  return 0;
#endif
}

uint32_t lm_crc32c(uint32_t crc, const void* p, size_t n) {
#ifdef LM_CRC32C_X86
  if (__builtin_cpu_supports("sse4.2")) return crc32c_sse42(crc, p, n);
#endif
  return lm_crc32c_portable(crc, p, n);
}
