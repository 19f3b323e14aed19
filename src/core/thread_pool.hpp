// kloop core: a small pool of worker threads for data-parallel host work, and the chunking rule
// every parallel loop of kloop uses.
//
// Responsibility: run f(0), f(1), …, f(n-1) — independent tasks, typically one fixed-size chunk
// of a tensor each — on several threads and return when all are done. The pool never decides
// what a task computes: callers split their work into chunks whose boundaries depend on the data
// size only (k_chunk_elems), and combine per-chunk results in chunk order, so a result is the same
// bits on 1 thread or 16 (check/input_generator, check/comparison rely on it; see
// docs/correctness.md, "Input generation").
//
// Threads: the shared pool has min(std::thread::hardware_concurrency(), k_max_threads) threads,
// counting the calling thread, which works too; the workers are created on first use and sleep
// on a condition variable between jobs (no spinning: a candidate timed on the host competes with
// nothing). A parallel_for issued from inside a task, or while another thread's job runs on the
// same pool, runs inline on the calling thread (same results, no deadlock). The first exception a
// task throws stops the hand-out of further tasks and is rethrown by parallel_for once every
// running task has finished.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kloop {

class thread_pool {
public:
    static constexpr unsigned k_max_threads = 16;

    // `threads` counts the caller: 1 (or 0) means no workers — every task runs on the caller.
    explicit thread_pool(unsigned threads);
    ~thread_pool();
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    [[nodiscard]] unsigned get_thread_count() const noexcept { return static_cast<unsigned>(m_workers.size()) + 1; }

    // Calls f(i) exactly once for every i in [0, n), on any of the pool's threads; returns when
    // all calls have returned. Tasks must not depend on which thread runs them, nor on order.
    void parallel_for(std::size_t n, const std::function<void(std::size_t)>& f);

    // The process-wide pool (default_thread_count() threads), created on first use.
    [[nodiscard]] static thread_pool& shared();

private:
    struct job;
    void worker_loop();
    static void run_tasks(job& j);

    std::vector<std::thread> m_workers;
    std::mutex m_submit;           // one job at a time; a concurrent or nested submit runs inline
    std::mutex m_mutex;            // guards everything below
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    job* m_job = nullptr;
    std::uint64_t m_generation = 0;
    unsigned m_busy = 0;           // workers inside the current job
    bool m_stop = false;
};

// min(std::thread::hardware_concurrency(), thread_pool::k_max_threads), at least 1.
[[nodiscard]] unsigned default_thread_count();

// Elements per chunk of every chunked parallel loop (64 Ki). Fixed, never derived from the
// thread count: chunk boundaries, and so every per-chunk random stream and partial sum, depend on
// the element count only.
inline constexpr std::int64_t k_chunk_elems = std::int64_t{1} << 16;

// Number of k_chunk_elems-sized chunks covering n elements (0 for n <= 0).
[[nodiscard]] constexpr std::int64_t chunk_count(std::int64_t n) {
    return n <= 0 ? 0 : (n + k_chunk_elems - 1) / k_chunk_elems;
}

// Calls f(chunk, begin, end) for every chunk [begin, end) of [0, n) on `pool`.
void parallel_for_chunks(thread_pool& pool, std::int64_t n,
                         const std::function<void(std::int64_t chunk, std::int64_t begin, std::int64_t end)>& f);

// Byte-range helpers on the shared pool, chunked by k_chunk_bytes (1 MiB): for the copies and
// comparisons of whole tensors (hundreds of MB on a GPU box) that a single core cannot stream.
inline constexpr std::size_t k_chunk_bytes = std::size_t{1} << 20;
void parallel_memcpy(void* dst, const void* src, std::size_t bytes);
void parallel_memset(void* dst, unsigned char value, std::size_t bytes);
// Fills `bytes` (a multiple of `width`, 1..8) with copies of the `width`-byte `pattern`.
void parallel_pattern_fill(void* dst, const void* pattern, std::size_t width, std::size_t bytes);
// Offset of the first byte where a and b differ, or `bytes` when they are equal.
[[nodiscard]] std::size_t parallel_first_difference(const void* a, const void* b, std::size_t bytes);

}  // namespace kloop
