/*
 * crc32c.h -- CRC-32C (Castagnoli), the checksum of every WAL record and
 * segment header (DESIGN §8). The SSE4.2 `crc32` instruction is used when the
 * CPU has it (checked once per call site through the compiler's CPU probe, no
 * global state of ours); a table-driven loop computes the same value anywhere.
 */
#ifndef LM_CRC32C_H
#define LM_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over n bytes at p; the result of one call over a
 * whole buffer equals successive calls over its pieces. lm_crc32c("123456789")
 * is 0xE3069283 (the standard check value). */
uint32_t lm_crc32c(uint32_t crc, const void* p, size_t n);

/* The portable path alone (tests compare it with lm_crc32c). */
uint32_t lm_crc32c_portable(uint32_t crc, const void* p, size_t n);

/* True when lm_crc32c uses the hardware instruction on this CPU. */
int lm_crc32c_hardware(void);

#endif /* LM_CRC32C_H */
