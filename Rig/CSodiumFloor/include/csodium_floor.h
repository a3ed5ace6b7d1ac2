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

/// Envelope v2 seal (HPKE auth mode, suite A.2) with the libsodium calls SecretCrypto makes: a
/// fresh ephemeral key, two X25519, the labeled HKDF of RFC 9180 on HMAC-SHA256, one
/// ChaCha20-Poly1305. `plaintext` is the 48-byte text form; ids are 36-byte canonical UUID text;
/// `sender_raw_id` the 16 raw bytes for the header. Writes NUL-terminated base64 of enc into
/// eph_b64 (45 bytes) and of header || ct into enc_b64 (at least 121 bytes). Returns 0 or -1.
/// `static_dh`, when not NULL, is DH(sender_sk, recipient_pk) computed once before (the engine
/// keeps it per recipient for a push); NULL computes it (three X25519 operations instead of two).
/// Sets up what the v2 key schedule keeps across messages (as the engine does); call once
/// before floor_envelope_v2_seal or floor_envelope_v2_open.
void floor_v2_prepare(void);

int floor_envelope_v2_seal(const unsigned char plaintext[48], const unsigned char recipient_pk[32],
                           const unsigned char sender_sk[32], const unsigned char sender_pk[32],
                           const char session_id[36], const char sender_id[36], const char recipient_id[36],
                           const unsigned char sender_raw_id[16], unsigned int generation,
                           const unsigned char *static_dh,
                           char *eph_b64, size_t eph_b64_len, char *enc_b64, size_t enc_b64_len);

/// Envelope v2 open with the same calls: decode, two X25519, the key schedule, one
/// ChaCha20-Poly1305 open. Writes the 48-byte plaintext. Returns 0, or -1 when anything fails.
int floor_envelope_v2_open(const char *eph_b64, size_t eph_b64_len, const char *enc_b64, size_t enc_b64_len,
                           const unsigned char recipient_sk[32], const unsigned char recipient_pk[32],
                           const unsigned char sender_pk[32], const char session_id[36], const char recipient_id[36],
                           unsigned char plaintext_out[48]);
#endif
