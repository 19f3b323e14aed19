// kloop core: the worker pool and the chunked byte helpers (see thread_pool.hpp).
#include "core/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace kloop {

namespace {

// True on a thread while it runs tasks of some pool: a parallel_for from inside a task runs
// inline instead of waiting for workers that may all be busy with the outer job.
thread_local bool t_in_task = false;

}  // namespace

struct thread_pool::job {
    const std::function<void(std::size_t)>* f = nullptr;
    std::size_t n = 0;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex error_mutex;
    std::exception_ptr error;
};

thread_pool::thread_pool(unsigned threads) {
    const unsigned n = std::clamp(threads, 1u, k_max_threads);
    m_workers.reserve(n - 1);
    for (unsigned i = 1; i < n; ++i) m_workers.emplace_back([this] { worker_loop(); });
}

thread_pool::~thread_pool() {
    {
        std::lock_guard lk(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    for (auto& t : m_workers) t.join();
}

void thread_pool::run_tasks(job& j) {
    const bool was_in_task = t_in_task;
    t_in_task = true;
    while (!j.failed.load(std::memory_order_relaxed)) {
        const std::size_t i = j.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= j.n) break;
        try {
            (*j.f)(i);
        } catch (...) {
            std::lock_guard lk(j.error_mutex);
            if (!j.error) j.error = std::current_exception();
            j.failed.store(true, std::memory_order_relaxed);
        }
    }
    t_in_task = was_in_task;
}

void thread_pool::worker_loop() {
    std::uint64_t seen = 0;
    std::unique_lock lk(m_mutex);
    for (;;) {
        m_wake.wait(lk, [&] { return m_stop || (m_job != nullptr && m_generation != seen); });
        if (m_stop) return;
        seen = m_generation;
        job* j = m_job;
        ++m_busy;
        lk.unlock();
        run_tasks(*j);
        lk.lock();
        if (--m_busy == 0) m_idle.notify_all();
    }
}

void thread_pool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& f) {
    if (n == 0) return;
    std::unique_lock submit(m_submit, std::defer_lock);
    if (m_workers.empty() || n == 1 || t_in_task || !submit.try_lock()) {
        for (std::size_t i = 0; i < n; ++i) f(i);
        return;
    }
    job j;
    j.f = &f;
    j.n = n;
    {
        std::lock_guard lk(m_mutex);
        m_job = &j;
        ++m_generation;
    }
    m_wake.notify_all();
    run_tasks(j);
    {
        // Every task has been handed out; late workers see no job and go back to sleep, the ones
        // inside it finish their last task.
        std::unique_lock lk(m_mutex);
        m_job = nullptr;
        m_idle.wait(lk, [&] { return m_busy == 0; });
    }
    if (j.error) std::rethrow_exception(j.error);
}

thread_pool& thread_pool::shared() {
    static thread_pool pool(default_thread_count());
    return pool;
}

unsigned default_thread_count() {
    const unsigned hw = std::thread::hardware_concurrency();
    return std::clamp(hw, 1u, thread_pool::k_max_threads);
}

void parallel_for_chunks(thread_pool& pool, std::int64_t n,
                         const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& f) {
    const std::int64_t chunks = chunk_count(n);
    pool.parallel_for(static_cast<std::size_t>(chunks), [&](std::size_t c) {
        const auto chunk = static_cast<std::int64_t>(c);
        const std::int64_t begin = chunk * k_chunk_elems;
        f(chunk, begin, std::min(n, begin + k_chunk_elems));
    });
}

namespace {

void for_byte_chunks(std::size_t bytes, const std::function<void(std::size_t, std::size_t)>& f) {
    const std::size_t chunks = (bytes + k_chunk_bytes - 1) / k_chunk_bytes;
    thread_pool::shared().parallel_for(chunks, [&](std::size_t c) {
        const std::size_t begin = c * k_chunk_bytes;
        f(begin, std::min(bytes, begin + k_chunk_bytes) - begin);
    });
}

}  // namespace

void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for_byte_chunks(bytes, [&](std::size_t off, std::size_t len) { std::memcpy(d + off, s + off, len); });
}

void parallel_memset(void* dst, unsigned char value, std::size_t bytes) {
    auto* d = static_cast<unsigned char*>(dst);
    for_byte_chunks(bytes, [&](std::size_t off, std::size_t len) { std::memset(d + off, value, len); });
}

void parallel_pattern_fill(void* dst, const void* pattern, std::size_t width, std::size_t bytes) {
    auto* d = static_cast<unsigned char*>(dst);
    // One 64-byte block of the pattern (64 is a multiple of every width 1..8 that divides it),
    // copied block by block: the compiler turns each fixed-size memcpy into vector stores.
    unsigned char block[64];
    for (std::size_t k = 0; k < sizeof block; ++k) block[k] = static_cast<const unsigned char*>(pattern)[k % width];
    const std::size_t period = (width == 1 || width == 2 || width == 4 || width == 8) ? sizeof block : width;
    for_byte_chunks(bytes, [&](std::size_t off, std::size_t len) {
        // Chunk offsets are multiples of 1 MiB, hence of `period`: the pattern stays in phase.
        unsigned char* p = d + off;
        std::size_t k = 0;
        if (period == sizeof block)
            for (; k + sizeof block <= len; k += sizeof block) std::memcpy(p + k, block, sizeof block);
        for (; k < len; ++k) p[k] = static_cast<const unsigned char*>(pattern)[(off + k) % width];
    });
}

std::size_t parallel_first_difference(const void* a, const void* b, std::size_t bytes) {
    const auto* x = static_cast<const unsigned char*>(a);
    const auto* y = static_cast<const unsigned char*>(b);
    const std::size_t chunks = (bytes + k_chunk_bytes - 1) / k_chunk_bytes;
    std::vector<std::size_t> first(chunks, bytes);
    thread_pool::shared().parallel_for(chunks, [&](std::size_t c) {
        const std::size_t begin = c * k_chunk_bytes;
        const std::size_t len = std::min(bytes, begin + k_chunk_bytes) - begin;
        if (std::memcmp(x + begin, y + begin, len) == 0) return;
        std::size_t k = 0;
        while (x[begin + k] == y[begin + k]) ++k;
        first[c] = begin + k;
    });
    for (std::size_t f : first)
        if (f < bytes) return f;
    return bytes;
}

}  // namespace kloop
