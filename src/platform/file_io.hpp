// kloop platform: reading and writing whole files, and temporary directories.
//
// Responsibility: the one route for kloop's file writes. write_file_atomic creates the parent
// directories and replaces the target by rename, so a reader (or a crash) never sees half a
// file (ninja's ReplaceContent). Errors name the path and the OS reason, in the shape
// "cannot open file 'x': No such file or directory" (fmt's os.cc), and are thrown as
// kloop::usage_error (exit code 2: a user or environment problem, not a kloop bug).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kloop::platform {

// The whole file, bytes as they are. Throws kloop::usage_error naming the path and the reason.
[[nodiscard]] std::string read_file(const std::filesystem::path& path);

// Creates missing parent directories, writes `content` to a temporary file in the same
// directory, fsyncs it and renames it over `path`. An existing target keeps its permission
// bits; a new one gets 0644. Throws kloop::usage_error naming the path and the reason
// ("... exists and is not a directory" is told apart from a failed create).
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Creates `dir` and its parents; throws kloop::usage_error when it cannot, or when `dir` (or
// a parent) exists and is not a directory. Addition beyond the brief: the shared check behind
// write_file_atomic, for callers that create run directories.
void ensure_directory(const std::filesystem::path& dir);

// A fresh directory under the system temp dir ($TMPDIR or /tmp), "<prefix>-XXXXXX", removed
// recursively on destruction unless keep() was called. Move-only. While it lives it is claimed
// (platform/stale_scratch.hpp): should this process die without removing it, the next kloop
// command does; keep() gives the claim up.
class scoped_temp_dir {
public:
    explicit scoped_temp_dir(std::string_view prefix = "kloop");
    ~scoped_temp_dir();
    scoped_temp_dir(const scoped_temp_dir&) = delete;
    scoped_temp_dir& operator=(const scoped_temp_dir&) = delete;
    scoped_temp_dir(scoped_temp_dir&& other) noexcept;
    scoped_temp_dir& operator=(scoped_temp_dir&& other) noexcept;

    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }
    void keep();

private:
    void remove_now() noexcept;

    std::filesystem::path m_path;
    bool m_keep = false;
    int m_claim = -1;  // the lock on "<path>.owner"
};

}  // namespace kloop::platform
