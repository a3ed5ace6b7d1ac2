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

/* ---- Envelope v2: RFC 9180 HPKE auth mode, suite A.2 ---- */

static const unsigned char KEM_SUITE[5] = {'K', 'E', 'M', 0x00, 0x20};
static const unsigned char HPKE_SUITE[10] = {'H', 'P', 'K', 'E', 0x00, 0x20, 0x00, 0x01, 0x00, 0x03};

static void hmac_parts(const unsigned char *key, size_t key_len, const unsigned char *const *parts, const size_t *lens,
                       size_t count, unsigned char out[32]) {
    crypto_auth_hmacsha256_state state;
    crypto_auth_hmacsha256_init(&state, key, key_len);
    for (size_t i = 0; i < count; i++) crypto_auth_hmacsha256_update(&state, parts[i], lens[i]);
    crypto_auth_hmacsha256_final(&state, out);
    sodium_memzero(&state, sizeof state);
}

static void labeled_extract(const unsigned char *suite, size_t suite_len, const unsigned char *salt, size_t salt_len,
                            const char *label, const unsigned char *ikm, size_t ikm_len, unsigned char out[32]) {
    const unsigned char *parts[4] = {(const unsigned char *)"HPKE-v1", suite, (const unsigned char *)label, ikm};
    size_t lens[4] = {7, suite_len, strlen(label), ikm_len};
    hmac_parts(salt, salt_len, parts, lens, 4, out);
}

/* Every output here is at most 32 bytes: one HKDF-Expand block. */
static void labeled_expand(const unsigned char *suite, size_t suite_len, const unsigned char prk[32], const char *label,
                           const unsigned char *info, size_t info_len, size_t length, unsigned char *out) {
    unsigned char length_bytes[2] = {(unsigned char)(length >> 8), (unsigned char)length};
    unsigned char counter = 1, block[32];
    const unsigned char *parts[6] = {length_bytes, (const unsigned char *)"HPKE-v1", suite, (const unsigned char *)label, info, &counter};
    size_t lens[6] = {2, 7, suite_len, strlen(label), info_len, 1};
    hmac_parts(prk, 32, parts, lens, 6, block);
    memcpy(out, block, length);
    sodium_memzero(block, sizeof block);
}

static size_t build_info(unsigned char info[150], const char session_id[36], const char sender_id[36], const char recipient_id[36],
                         unsigned int generation) {
    size_t n = 0;
    memcpy(info, "unbound-session-secret-v2", 25); n += 25;
    info[n++] = 0; memcpy(info + n, session_id, 36); n += 36;
    info[n++] = 0; memcpy(info + n, sender_id, 36); n += 36;
    info[n++] = 0; memcpy(info + n, recipient_id, 36); n += 36;
    info[n++] = 0;
    info[n++] = (unsigned char)(generation >> 24); info[n++] = (unsigned char)(generation >> 16);
    info[n++] = (unsigned char)(generation >> 8); info[n++] = (unsigned char)generation;
    return n;
}

/* The same shortcuts as the engine's key schedule, so that the two do the same work: the empty
   salt's HMAC state keyed once, psk_id_hash of the empty psk_id computed once, and the secret's
   HMAC state keyed once for both key and base_nonce. Set up by floor_v2_prepare(). */
static crypto_auth_hmacsha256_state empty_salt_state;
static unsigned char empty_psk_id_hash[32];
static int prepared = 0;

static void keyed_mac(const crypto_auth_hmacsha256_state *keyed, const unsigned char *const *parts, const size_t *lens,
                      size_t count, unsigned char out[32]) {
    crypto_auth_hmacsha256_state state = *keyed;
    for (size_t i = 0; i < count; i++) crypto_auth_hmacsha256_update(&state, parts[i], lens[i]);
    crypto_auth_hmacsha256_final(&state, out);
    sodium_memzero(&state, sizeof state);
}

static void empty_salt_extract(const unsigned char *suite, size_t suite_len, const char *label, const unsigned char *ikm,
                               size_t ikm_len, unsigned char out[32]) {
    const unsigned char *parts[4] = {(const unsigned char *)"HPKE-v1", suite, (const unsigned char *)label, ikm};
    size_t lens[4] = {7, suite_len, strlen(label), ikm_len};
    keyed_mac(&empty_salt_state, parts, lens, 4, out);
}

static void keyed_expand(const crypto_auth_hmacsha256_state *keyed, const unsigned char *suite, size_t suite_len,
                         const char *label, const unsigned char *info, size_t info_len, size_t length, unsigned char *out) {
    unsigned char length_bytes[2] = {(unsigned char)(length >> 8), (unsigned char)length};
    unsigned char counter = 1, block[32];
    const unsigned char *parts[6] = {length_bytes, (const unsigned char *)"HPKE-v1", suite, (const unsigned char *)label, info, &counter};
    size_t lens[6] = {2, 7, suite_len, strlen(label), info_len, 1};
    keyed_mac(keyed, parts, lens, 6, block);
    memcpy(out, block, length);
    sodium_memzero(block, sizeof block);
}

void floor_v2_prepare(void) {
    if (prepared) return;
    static const unsigned char no_key[1] = {0};
    crypto_auth_hmacsha256_init(&empty_salt_state, no_key, 0);
    empty_salt_extract(HPKE_SUITE, 10, "psk_id_hash", NULL, 0, empty_psk_id_hash);
    prepared = 1;
}

/* shared_secret from dh (64 bytes) and kem_context (96 bytes), then key and base_nonce. */
static void schedule(const unsigned char dh[64], const unsigned char kem_context[96], const unsigned char *info, size_t info_len,
                     unsigned char key[32], unsigned char nonce[12]) {
    unsigned char prk[32], shared[32], info_hash[32], secret[32], context[65];
    crypto_auth_hmacsha256_state secret_state;
    empty_salt_extract(KEM_SUITE, 5, "eae_prk", dh, 64, prk);
    labeled_expand(KEM_SUITE, 5, prk, "shared_secret", kem_context, 96, 32, shared);
    empty_salt_extract(HPKE_SUITE, 10, "info_hash", info, info_len, info_hash);
    context[0] = 0x02;
    memcpy(context + 1, empty_psk_id_hash, 32);
    memcpy(context + 33, info_hash, 32);
    labeled_extract(HPKE_SUITE, 10, shared, 32, "secret", NULL, 0, secret);
    crypto_auth_hmacsha256_init(&secret_state, secret, 32);
    keyed_expand(&secret_state, HPKE_SUITE, 10, "key", context, 65, 32, key);
    keyed_expand(&secret_state, HPKE_SUITE, 10, "base_nonce", context, 65, 12, nonce);
    sodium_memzero(prk, 32); sodium_memzero(shared, 32); sodium_memzero(secret, 32);
    sodium_memzero(&secret_state, sizeof secret_state);
}

int floor_envelope_v2_seal(const unsigned char plaintext[48], const unsigned char recipient_pk[32],
                           const unsigned char sender_sk[32], const unsigned char sender_pk[32],
                           const char session_id[36], const char sender_id[36], const char recipient_id[36],
                           const unsigned char sender_raw_id[16], unsigned int generation,
                           const unsigned char *static_dh,
                           char *eph_b64, size_t eph_b64_len, char *enc_b64, size_t enc_b64_len) {
    unsigned char esk[32], epk[32], dh[64], kem_context[96], info[150], key[32], nonce[12], field[21 + 48 + 16];
    randombytes_buf(esk, 32);
    if (crypto_scalarmult_base(epk, esk) != 0) return -1;
    /* static_dh: DH(skS, pkR) computed once per recipient, as the engine keeps it per push. */
    if (crypto_scalarmult(dh, esk, recipient_pk) != 0 ||
        (static_dh ? (memcpy(dh + 32, static_dh, 32), 0) : crypto_scalarmult(dh + 32, sender_sk, recipient_pk)) != 0) {
        sodium_memzero(esk, 32); sodium_memzero(dh, 64);
        return -1;
    }
    memcpy(kem_context, epk, 32); memcpy(kem_context + 32, recipient_pk, 32); memcpy(kem_context + 64, sender_pk, 32);
    size_t info_len = build_info(info, session_id, sender_id, recipient_id, generation);
    schedule(dh, kem_context, info, info_len, key, nonce);
    field[0] = 0x02;
    memcpy(field + 1, sender_raw_id, 16);
    field[17] = (unsigned char)(generation >> 24); field[18] = (unsigned char)(generation >> 16);
    field[19] = (unsigned char)(generation >> 8); field[20] = (unsigned char)generation;
    unsigned long long written = 0;
    crypto_aead_chacha20poly1305_ietf_encrypt(field + 21, &written, plaintext, 48, NULL, 0, NULL, nonce, key);
    sodium_bin2base64(eph_b64, eph_b64_len, epk, 32, sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(enc_b64, enc_b64_len, field, sizeof field, sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(esk, 32); sodium_memzero(dh, 64); sodium_memzero(key, 32);
    return 0;
}

int floor_envelope_v2_open(const char *eph_b64, size_t eph_b64_len, const char *enc_b64, size_t enc_b64_len,
                           const unsigned char recipient_sk[32], const unsigned char recipient_pk[32],
                           const unsigned char sender_pk[32], const char session_id[36], const char recipient_id[36],
                           unsigned char plaintext_out[48]) {
    unsigned char enc[32], field[21 + 48 + 16 + 4], dh[64], kem_context[96], info[150], key[32], nonce[12];
    size_t enc_len = 0, field_len = 0;
    char sender_id[37];
    if (eph_b64_len < 3 || memcmp(eph_b64, "v2:", 3) != 0) return -1;
    if (sodium_base642bin(enc, sizeof enc, eph_b64 + 3, eph_b64_len - 3, NULL, &enc_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 || enc_len != 32) return -1;
    if (sodium_base642bin(field, sizeof field, enc_b64, enc_b64_len, NULL, &field_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) return -1;
    if (field_len != 21 + 48 + 16 || field[0] != 0x02) return -1;
    unsigned int generation = ((unsigned int)field[17] << 24) | ((unsigned int)field[18] << 16) | ((unsigned int)field[19] << 8) | field[20];
    if (generation == 0) return -1;
    static const char hex[] = "0123456789abcdef";
    size_t pos = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) sender_id[pos++] = '-';
        sender_id[pos++] = hex[field[1 + i] >> 4];
        sender_id[pos++] = hex[field[1 + i] & 15];
    }
    if (crypto_scalarmult(dh, recipient_sk, enc) != 0 || crypto_scalarmult(dh + 32, recipient_sk, sender_pk) != 0) {
        sodium_memzero(dh, 64);
        return -1;
    }
    memcpy(kem_context, enc, 32); memcpy(kem_context + 32, recipient_pk, 32); memcpy(kem_context + 64, sender_pk, 32);
    size_t info_len = build_info(info, session_id, sender_id, recipient_id, generation);
    schedule(dh, kem_context, info, info_len, key, nonce);
    unsigned long long written = 0;
    int status = crypto_aead_chacha20poly1305_ietf_decrypt(plaintext_out, &written, NULL, field + 21, 48 + 16, NULL, 0, nonce, key);
    sodium_memzero(dh, 64); sodium_memzero(key, 32);
    return status == 0 ? 0 : -1;
}
