#include "csodium_floor.h"
#include <sodium.h>
#include <string.h>

static const unsigned char info[] = "unbound-session-secret-v1";
#define INFO_LEN (sizeof info - 1)
#define TEXT_LEN 48

static void hmac(unsigned char out[32], const unsigned char *key, size_t key_len,
                 const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len,
                 const unsigned char *c, size_t c_len) {
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, key_len);
    if (a_len) crypto_auth_hmacsha256_update(&st, a, a_len);
    if (b_len) crypto_auth_hmacsha256_update(&st, b, b_len);
    if (c_len) crypto_auth_hmacsha256_update(&st, c, c_len);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

static void hkdf32(unsigned char key[32], const unsigned char shared[32], const char *salt, size_t salt_len) {
    unsigned char prk[32];
    const unsigned char one = 1;
    hmac(prk, (const unsigned char *)salt, salt_len, shared, 32, NULL, 0, NULL, 0);
    hmac(key, prk, 32, NULL, 0, info, INFO_LEN, &one, 1);
    sodium_memzero(prk, sizeof prk);
}

int floor_envelope_seal(const unsigned char secret[32], const unsigned char recipient_pk[32],
                        const char *session_id, size_t session_id_len,
                        char *eph_b64, size_t eph_b64_len, char *enc_b64, size_t enc_b64_len) {
    unsigned char eph_sk[32], eph_pk[32], shared[32], key[32];
    unsigned char text[TEXT_LEN + 1];
    unsigned char sealed[12 + TEXT_LEN + 16];
    char body[45];
    int rc = -1;

    randombytes_buf(eph_sk, sizeof eph_sk);
    randombytes_buf(sealed, 12);
    memcpy(text, "sess_", 5);
    sodium_bin2base64(body, sizeof body, secret, 32, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    memcpy(text + 5, body, 43);
    if (crypto_scalarmult_base(eph_pk, eph_sk) != 0) goto done;
    if (crypto_scalarmult(shared, eph_sk, recipient_pk) != 0) goto done;
    hkdf32(key, shared, session_id, session_id_len);
    crypto_aead_chacha20poly1305_ietf_encrypt(sealed + 12, NULL, text, TEXT_LEN, NULL, 0, NULL, sealed, key);
    sodium_bin2base64(enc_b64, enc_b64_len, sealed, sizeof sealed, sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(eph_b64, eph_b64_len, eph_pk, 32, sodium_base64_VARIANT_ORIGINAL);
    rc = 0;
done:
    sodium_memzero(eph_sk, sizeof eph_sk);
    sodium_memzero(shared, sizeof shared);
    sodium_memzero(key, sizeof key);
    sodium_memzero(text, sizeof text);
    sodium_memzero(body, sizeof body);
    return rc;
}

int floor_envelope_open(const char *eph_b64, size_t eph_b64_len, const char *enc_b64, size_t enc_b64_len,
                        const unsigned char recipient_sk[32], const char *session_id, size_t session_id_len,
                        unsigned char secret_out[32]) {
    unsigned char eph_pk[33], shared[32], key[32], sealed[128], text[128];
    size_t eph_len = 0, sealed_len = 0, secret_len = 0;
    unsigned long long text_len = 0;
    int rc = -1;

    if (sodium_base642bin(eph_pk, sizeof eph_pk, eph_b64, eph_b64_len, NULL, &eph_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 || eph_len != 32) goto done;
    if (sodium_base642bin(sealed, sizeof sealed, enc_b64, enc_b64_len, NULL, &sealed_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 || sealed_len < 28) goto done;
    if (crypto_scalarmult(shared, recipient_sk, eph_pk) != 0) goto done;
    hkdf32(key, shared, session_id, session_id_len);
    if (crypto_aead_chacha20poly1305_ietf_decrypt(text, &text_len, NULL, sealed + 12, sealed_len - 12, NULL, 0, sealed, key) != 0) goto done;
    if (text_len != TEXT_LEN || memcmp(text, "sess_", 5) != 0) goto done;
    if (sodium_base642bin(secret_out, 32, (const char *)text + 5, 43, NULL, &secret_len, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 || secret_len != 32) goto done;
    rc = 0;
done:
    sodium_memzero(shared, sizeof shared);
    sodium_memzero(key, sizeof key);
    sodium_memzero(text, sizeof text);
    return rc;
}
