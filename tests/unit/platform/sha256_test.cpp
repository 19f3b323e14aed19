// Unit under test: platform/sha256 — known vectors (FIPS 180-2), files, incremental hashing.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"

namespace kp = kloop::platform;

TEST(Sha256Test, KnownVectors) {
    EXPECT_EQ(kp::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(kp::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(kp::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, FileMatchesBytesAcrossChunks) {
    kp::scoped_temp_dir dir("kloop-sha256-test");
    std::string big(200000, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
    kp::write_file_atomic(dir.path() / "big.bin", big);
    EXPECT_EQ(kp::sha256_file(dir.path() / "big.bin"), kp::sha256_hex(big));
    // "a million a's" vector, through the file path.
    kp::write_file_atomic(dir.path() / "a.txt", std::string(1000000, 'a'));
    EXPECT_EQ(kp::sha256_file(dir.path() / "a.txt"),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, MissingFileThrowsUsageError) {
    EXPECT_THROW((void)kp::sha256_file("/nonexistent/kloop.bin"), kloop::usage_error);
}

TEST(Sha256Test, IncrementalAndFields) {
    kp::sha256_hasher h;
    h.update("a").update("bc");
    EXPECT_EQ(h.hex_digest(), kp::sha256_hex("abc"));
    // The hasher resets after a digest.
    EXPECT_EQ(h.hex_digest(), kp::sha256_hex(""));
    kp::sha256_hasher f1, f2;
    f1.update_field("ab").update_field("c");
    f2.update_field("a").update_field("bc");
    EXPECT_NE(f1.hex_digest(), f2.hex_digest());
}
