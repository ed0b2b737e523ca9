// CCrypto -- OpenSSL from Debian's libssl-dev: libcrypto (SHA-1, HMAC, RSA/ECDSA verify) and libssl (TLS).
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// OpenSSL spells these as macros over SSL_CTX_ctrl/SSL_ctrl, which Swift cannot import.

/// TLS 1.2 minimum, no renegotiation, partial writes from a buffer that may move between retries.
static inline int ccrypto_ssl_ctx_harden(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return 0;
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                              | SSL_MODE_RELEASE_BUFFERS);
    return 1;
}

/// Server Name Indication for a client session.
static inline int ccrypto_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// The certificate's serial number, as uppercase hexadecimal (caller frees with OPENSSL_free), or NULL.
static inline char *ccrypto_ssl_ctx_certificate_serial(SSL_CTX *ctx) {
    X509 *cert = SSL_CTX_get0_certificate(ctx);
    if (cert == NULL) return NULL;
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    if (bn == NULL) return NULL;
    char *hex = BN_bn2hex(bn);
    BN_free(bn);
    return hex;
}

static inline void ccrypto_openssl_free(void *pointer) { OPENSSL_free(pointer); }
#endif
