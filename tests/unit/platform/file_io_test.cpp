// Unit under test: platform/file_io — read_file, write_file_atomic, ensure_directory,
// scoped_temp_dir.
#include <gtest/gtest.h>

#include <filesystem>
#include <sys/stat.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;

TEST(FileIoTest, AtomicWriteCreatesParentsAndReplaces) {
    kp::scoped_temp_dir dir("kloop-file-io-test");
    fs::path target = dir.path() / "a" / "b" / "c.txt";
    kp::write_file_atomic(target, "first");
    EXPECT_EQ(kp::read_file(target), "first");
    kp::write_file_atomic(target, std::string("second\0with nul", 15));
    EXPECT_EQ(kp::read_file(target), std::string("second\0with nul", 15));
    // No temporary files are left behind.
    int entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(target.parent_path())) ++entries;
    EXPECT_EQ(entries, 1);
}

TEST(FileIoTest, AtomicWriteKeepsPermissionsOfAnExistingFile) {
    kp::scoped_temp_dir dir("kloop-file-io-test");
    fs::path target = dir.path() / "script.sh";
    kp::write_file_atomic(target, "#!/bin/sh\n");
    struct stat st {};
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    ::chmod(target.c_str(), 0755);
    kp::write_file_atomic(target, "#!/bin/sh\necho\n");
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST(FileIoTest, AtomicWriteEmptyContent) {
    kp::scoped_temp_dir dir("kloop-file-io-test");
    kp::write_file_atomic(dir.path() / "empty", "");
    EXPECT_EQ(kp::read_file(dir.path() / "empty"), "");
}

TEST(FileIoTest, ReadMissingFileNamesPathAndReason) {
    try {
        (void)kp::read_file("/nonexistent/kloop/file.txt");
        FAIL() << "expected usage_error";
    } catch (const kloop::usage_error& e) {
        EXPECT_STREQ(e.what(), "cannot open file '/nonexistent/kloop/file.txt': No such file or directory");
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
    }
}

// A FIFO with no writer would block a plain open; a device would never end.
TEST(FileIoTest, ReadRefusesAFifoAndADeviceWithoutBlocking) {
    kp::scoped_temp_dir dir("kloop-file-io-test");
    const auto fifo = dir.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const fs::path& p : {fifo, fs::path("/dev/zero")}) {
        try {
            (void)kp::read_file(p);
            ADD_FAILURE() << "read " << p;
        } catch (const kloop::usage_error& e) {
            EXPECT_EQ(std::string(e.what()), "cannot read file '" + p.string() + "': not a regular file");
        }
    }
}

TEST(FileIoTest, WriteUnderAFileSaysItIsNotADirectory) {
    kp::scoped_temp_dir dir("kloop-file-io-test");
    kp::write_file_atomic(dir.path() / "plain", "x");
    try {
        kp::write_file_atomic(dir.path() / "plain" / "sub" / "f.txt", "y");
        FAIL() << "expected usage_error";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("exists and is not a directory"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("plain"), std::string::npos) << e.what();
    }
}

TEST(FileIoTest, TempDirIsRemovedRecursively) {
    fs::path p;
    {
        kp::scoped_temp_dir dir("kloop-file-io-test");
        p = dir.path();
        EXPECT_TRUE(fs::is_directory(p));
        EXPECT_NE(p.filename().string().find("kloop-file-io-test-"), std::string::npos);
        kp::write_file_atomic(p / "x" / "y.txt", "z");
    }
    EXPECT_FALSE(fs::exists(p));
}

TEST(FileIoTest, TempDirKeep) {
    fs::path p;
    {
        kp::scoped_temp_dir dir("kloop-file-io-test");
        p = dir.path();
        dir.keep();
    }
    EXPECT_TRUE(fs::is_directory(p));
    fs::remove_all(p);
}

TEST(FileIoTest, TempDirMoveTransfersOwnership) {
    fs::path p;
    {
        kp::scoped_temp_dir a("kloop-file-io-test");
        p = a.path();
        kp::scoped_temp_dir b(std::move(a));
        EXPECT_EQ(b.path(), p);
        EXPECT_TRUE(a.path().empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    }
    EXPECT_FALSE(fs::exists(p));
}
