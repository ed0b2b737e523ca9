// CCrypto -- OpenSSL libcrypto from Debian's libssl-dev: SHA-1, HMAC, RSA/ECDSA verify.
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
#endif
