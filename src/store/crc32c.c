/*
 * crc32c.c -- CRC-32C with the SSE4.2 instruction where present, else a table.
 */
#include "store/crc32c.h"

#include <string.h>

#include "store/crc32c_table.h"

uint32_t lm_crc32c_portable(uint32_t crc, const void* p, size_t n) {
  const uint8_t* b = p;
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; i++) c = lm_crc32c_table[(c ^ b[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LM_CRC32C_X86 1

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void* p,
                                                                 size_t n) {
  const uint8_t* b = p;
  uint64_t c = (uint32_t)~crc;
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, b, 8);  /* unaligned-safe load; compiles to one mov */
    c = __builtin_ia32_crc32di(c, word);
    b += 8;
    n -= 8;
  }
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
