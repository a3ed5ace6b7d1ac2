#ifndef CSODIUM_FLOOR_H
#define CSODIUM_FLOOR_H
#include <stddef.h>

/// Envelope v1 seal with the exact libsodium calls SecretCrypto makes, and nothing else:
/// the benchmark's floor. Writes NUL-terminated base64 into eph_b64 (45 bytes) and
/// enc_b64 (at least 4 * ((12 + 48 + 16 + 2) / 3) + 1 bytes). Returns 0, or -1 on a low-order key.
int floor_envelope_seal(const unsigned char secret[32], const unsigned char recipient_pk[32],
                        const char *session_id, size_t session_id_len,
                        char *eph_b64, size_t eph_b64_len, char *enc_b64, size_t enc_b64_len);

/// Envelope v1 open with the exact libsodium calls SecretCrypto makes. Writes the 32 raw secret
/// bytes. Returns 0, or -1 when anything fails.
int floor_envelope_open(const char *eph_b64, size_t eph_b64_len, const char *enc_b64, size_t enc_b64_len,
                        const unsigned char recipient_sk[32], const char *session_id, size_t session_id_len,
                        unsigned char secret_out[32]);
#endif
