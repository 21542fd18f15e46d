// SPDX-License-Identifier: Apache-2.0
// GEMM and quantisation helpers (see gemm.h). No operation is registered here.
#include "gemm.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "../json.h"
#include "../kernels/vector_convert.h"
#include "../statistics.h"

namespace mock_nnapi {
namespace gemm {
namespace {

constexpr size_t kBlasIntMax = static_cast<size_t>(std::numeric_limits<blasint>::max());

// Every integer of magnitude up to 2^24 is exact in a float.
constexpr double kExactFloatLimit = 16777216.0;

// Minimum multiply-adds per thread before ParallelFor uses threads.
constexpr size_t kMinWorkPerThread = 1 << 16;

CBLAS_TRANSPOSE ToCblas(Transpose transpose) {
  return transpose == Transpose::kYes ? CblasTrans : CblasNoTrans;
}

// Reference loop for shapes OpenBLAS's 32-bit interface cannot address.
void NaiveGemm(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, float alpha,
               const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c,
               size_t ldc) {
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (size_t p = 0; p < k; ++p) {
        const float x = trans_a == Transpose::kYes ? a[p * lda + i] : a[i * lda + p];
        const float y = trans_b == Transpose::kYes ? b[j * ldb + p] : b[p * ldb + j];
        sum += static_cast<double>(x) * y;
      }
      float& out = c[i * ldc + j];
      out = static_cast<float>(alpha * sum + (beta == 0.f ? 0.f : beta * out));
    }
  }
}

// One OpenBLAS call (threaded as OpenBLAS decides).
void SgemmDirect(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, float alpha,
                 const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c,
                 size_t ldc) {
  if (k == 0) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    }
    return;
  }
  const size_t largest = std::max({m, n, k, lda, ldb, ldc});
  if (largest > kBlasIntMax) {
    NaiveGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (m == 1) {
    // c = op(B)^T a, with a the single row of op(A).
    const size_t inc_a = trans_a == Transpose::kYes ? lda : 1;
    if (trans_b == Transpose::kYes) {  // B is N x K
      scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(n),
                        static_cast<blasint>(k), alpha, b, static_cast<blasint>(ldb), a,
                        static_cast<blasint>(inc_a), beta, c, 1);
    } else {  // B is K x N
      scipy_cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(k), static_cast<blasint>(n),
                        alpha, b, static_cast<blasint>(ldb), a, static_cast<blasint>(inc_a), beta,
                        c, 1);
    }
    return;
  }
  if (n == 1) {
    // c = op(A) b, with b the single column of op(B); c has stride ldc.
    const size_t inc_b = trans_b == Transpose::kYes ? 1 : ldb;
    if (trans_a == Transpose::kYes) {  // A is K x M
      scipy_cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(k), static_cast<blasint>(m),
                        alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(inc_b), beta,
                        c, static_cast<blasint>(ldc));
    } else {  // A is M x K
      scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(m),
                        static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
                        static_cast<blasint>(inc_b), beta, c, static_cast<blasint>(ldc));
    }
    return;
  }
  scipy_cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), static_cast<blasint>(m),
                    static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                    static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                    static_cast<blasint>(ldc));
}

size_t DivideRoundingUp(size_t a, size_t b) { return (a + b - 1) / b; }

// OpenBLAS's thread count is one process-wide setting, used in two ways:
// - SingleThreadedBlas scopes limit OpenBLAS to one thread while they live (nested, and open in
//   any number of threads at once: the previous setting comes back when the last one ends). Every
//   OpenBLAS call of a pool job or of a small product runs under one, so OpenBLAS's own helper
//   threads, which spin for a while after each threaded call, do not compete with the pool's
//   workers for the cores.
// - With MOCK_NNAPI_GEMM_THREADING=blas, a large product is threaded by OpenBLAS itself
//   (RunThreaded), one at a time and only while no single-threaded scope is open. It waits for
//   the open scopes to close and, from then on, new scopes wait for it, except nested ones (a
//   thread that holds a scope, or a pool worker, whose job's owner holds one): they never wait,
//   so nothing waits in a cycle. A large product always takes this path (never the pool when
//   OpenBLAS's threads are busy): its bits do not depend on what other executions do.
class BlasThreads {
 public:
  static BlasThreads& Get() {
    static BlasThreads* state = new BlasThreads();  // never destroyed: used until exit
    return *state;
  }
  // Whether the calling thread holds a scope, is a pool worker or runs a ParallelFor body inline:
  // its products run single-threaded (they never take OpenBLAS's threads).
  static bool Nested() { return HoldsScope() || loop_depth_ > 0; }
  // Whether the calling thread holds a scope or is a pool worker (whose job's owner holds one):
  // its scopes never wait.
  static bool HoldsScope() { return depth_ > 0 || pool_worker_; }
  static void MarkPoolWorker() { pool_worker_ = true; }
  // Marks the calling thread nested while a ParallelFor body runs on it without a scope (too
  // little work for threads): its products stay single-threaded, as in a pool job.
  class InLoop {
   public:
    InLoop() { ++loop_depth_; }
    ~InLoop() { --loop_depth_; }
    InLoop(const InLoop&) = delete;
    InLoop& operator=(const InLoop&) = delete;
  };

  // OpenBLAS's setting outside the scopes (OPENBLAS_NUM_THREADS, threadpoolctl).
  int UserThreads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::max(1, single_ > 0 ? saved_ : scipy_openblas_get_num_threads());
  }
  void EnterSingle() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!HoldsScope()) idle_.wait(lock, [&] { return !threaded_ && waiting_ == 0; });
    ++depth_;
    if (single_++ == 0) {
      saved_ = scipy_openblas_get_num_threads();
      scipy_openblas_set_num_threads(1);
    }
  }
  void LeaveSingle() {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --depth_;
      if (--single_ == 0) {
        scipy_openblas_set_num_threads(saved_);
        last = true;
      }
    }
    if (last) idle_.notify_all();
  }
  template <typename Body>
  void RunThreaded(const Body& body) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++waiting_;
      idle_.wait(lock, [&] { return !threaded_ && single_ == 0; });
      --waiting_;
      threaded_ = true;
    }
    body();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      threaded_ = false;
    }
    idle_.notify_all();
  }

 private:
  static thread_local int depth_;         // scopes open on this thread
  static thread_local int loop_depth_;    // ParallelFor bodies running here without a scope
  static thread_local bool pool_worker_;  // a ThreadPool worker thread
  std::mutex mutex_;
  std::condition_variable idle_;  // signalled when the last scope or a threaded call ends
  int single_ = 0;                // open single-threaded scopes (all threads)
  int waiting_ = 0;               // large products waiting for OpenBLAS's threads
  bool threaded_ = false;         // a threaded call is running
  int saved_ = 1;                 // the setting before the first open scope
};

thread_local int BlasThreads::depth_ = 0;
thread_local int BlasThreads::loop_depth_ = 0;
thread_local bool BlasThreads::pool_worker_ = false;

class SingleThreadedBlas {
 public:
  SingleThreadedBlas() { BlasThreads::Get().EnterSingle(); }
  ~SingleThreadedBlas() { BlasThreads::Get().LeaveSingle(); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

void ParallelForOn(size_t max_threads, size_t count, size_t cost_per_item,
                   const std::function<void(size_t begin, size_t end)>& body);

// Whether a large matrix-matrix product goes to OpenBLAS's own threads rather than to the pool:
// only with MOCK_NNAPI_GEMM_THREADING=blas (read on every large product, so one process can
// alternate for an A/B measurement). Not the default: measured on this 2-core machine under load
// (docs/performance.md), OpenBLAS's static split waits for its slowest thread and ran 1.2-12x
// slower than the pool's dynamic one.
bool PreferThreadedBlas() {
  const char* mode = std::getenv("MOCK_NNAPI_GEMM_THREADING");
  return mode != nullptr && std::strcmp(mode, "blas") == 0;
}

}  // namespace

void Sgemm(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, float alpha,
           const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c,
           size_t ldc) {
  if (m == 0 || n == 0) return;
  const size_t threads = static_cast<size_t>(ThreadCount());
  if (threads <= 1 || k == 0 || m * n * k < kParallelGemmWork) {
    SingleThreadedBlas single_threaded;
    SgemmDirect(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // A large matrix-matrix product: one OpenBLAS call on its own threads (see BlasThreads).
  if (m > 1 && n > 1 && PreferThreadedBlas()) {
    BlasThreads::Get().RunThreaded(
        [&] { SgemmDirect(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
    return;
  }
  // Split the larger output dimension into blocks computed by single-threaded OpenBLAS calls on
  // the pool (see ParallelFor): a few blocks per thread, multiples of 16 columns or rows. A
  // matrix-vector product (m or n is 1, bound by memory bandwidth) is split the same way, into
  // sgemv calls on row blocks of the matrix.
  const bool split_columns = n >= m;
  const size_t extent = split_columns ? n : m;
  const size_t step =
      std::min(extent, DivideRoundingUp(DivideRoundingUp(extent, threads * 4), 16) * 16);
  const size_t blocks = DivideRoundingUp(extent, step);
  const size_t block_work = (split_columns ? m : n) * step * k;
  // Every block single-threaded, also when they all run here (the pool busy with another
  // execution's job); the blocks are spread over `threads` threads, decided above, as the scope
  // makes ThreadCount() read 1 from here on.
  SingleThreadedBlas single_threaded;
  ParallelForOn(threads, blocks, block_work, [&](size_t begin, size_t end) {
    for (size_t block = begin; block < end; ++block) {
      const size_t first = block * step;
      const size_t size = std::min(step, extent - first);
      if (split_columns) {  // columns [first, first + size) of op(B) and C
        const float* b_block = trans_b == Transpose::kYes ? b + first * ldb : b + first;
        SgemmDirect(trans_a, trans_b, m, size, k, alpha, a, lda, b_block, ldb, beta, c + first,
                    ldc);
      } else {  // rows [first, first + size) of op(A) and C
        const float* a_block = trans_a == Transpose::kYes ? a + first : a + first * lda;
        SgemmDirect(trans_a, trans_b, size, n, k, alpha, a_block, lda, b, ldb, beta,
                    c + first * ldc, ldc);
      }
    }
  });
}

void IntegerGemm(Transpose trans_a, Transpose trans_b, size_t m, size_t n, size_t k, const float* a,
                 size_t lda, float max_abs_a, const float* b, size_t ldb, float max_abs_b,
                 int32_t* c, size_t ldc) {
  if (m == 0 || n == 0) return;
  const double product_bound = std::max(1.0, static_cast<double>(max_abs_a) * max_abs_b);
  const size_t chunk = std::max<size_t>(1, static_cast<size_t>(kExactFloatLimit / product_bound));
  // Written on values, not std::min/std::max (which return references): the loop vectorises.
  auto saturate = [](double value) {
    const double low = std::numeric_limits<int32_t>::min();
    const double high = std::numeric_limits<int32_t>::max();
    const double at_least_low = value < low ? low : value;
    return static_cast<int32_t>(high < at_least_low ? high : at_least_low);
  };
  // Uninitialised: Sgemm writes every element (beta = 0).
  std::unique_ptr<float[]> partial(new float[m * n]);
  if (k <= chunk) {
    Sgemm(trans_a, trans_b, m, n, k, 1.f, a, lda, b, ldb, 0.f, partial.get(), n);
    // One chunk: |sum| <= k * max_abs_a * max_abs_b <= 2^24, so saturation never applies.
    for (size_t i = 0; i < m; ++i) {
      const float* __restrict__ row = partial.get() + i * n;
      int32_t* __restrict__ out = c + i * ldc;
      for (size_t j = 0; j < n; ++j) out[j] = static_cast<int32_t>(row[j]);
    }
    return;
  }
  std::vector<double> sum(m * n, 0.0);
  for (size_t k0 = 0; k0 < k; k0 += chunk) {
    const size_t kc = std::min(chunk, k - k0);
    // The chunk's columns of op(A) and rows of op(B).
    const float* a_chunk = trans_a == Transpose::kYes ? a + k0 * lda : a + k0;
    const float* b_chunk = trans_b == Transpose::kYes ? b + k0 : b + k0 * ldb;
    Sgemm(trans_a, trans_b, m, n, kc, 1.f, a_chunk, lda, b_chunk, ldb, 0.f, partial.get(), n);
    for (size_t i = 0; i < m * n; ++i) sum[i] += partial[i];
  }
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) c[i * ldc + j] = saturate(sum[i * n + j]);
  }
}

namespace {

// OPENBLAS_CORETYPE as OpenBLAS read it: OpenBLAS (a DT_NEEDED dependency) chose its kernels when
// it loaded, just before the mock's static initialisers run.
const char* const kCoreTypeAtLoad = [] {
  const char* value = std::getenv("OPENBLAS_CORETYPE");
  return value == nullptr ? nullptr : strdup(value);  // never freed: lives as long as the process
}();

}  // namespace

std::string BlasInfoJson() {
  std::string source = "OpenBLAS's own detection";
  if (kCoreTypeAtLoad != nullptr) {
    source = std::string("OPENBLAS_CORETYPE=") + kCoreTypeAtLoad + " (environment)";
  }
  return "{\"config\": " + JsonQuote(scipy_openblas_get_config()) +
         ", \"core\": " + JsonQuote(scipy_openblas_get_corename()) +
         ", \"core_source\": " + JsonQuote(source) +
         ", \"threads\": " + std::to_string(ThreadCount()) + "}";
}

int ThreadCount() {
  // Not OpenBLAS's current setting: it reads 1 while any execution holds a single-threaded scope.
  return BlasThreads::Nested() ? 1 : BlasThreads::Get().UserThreads();
}

namespace {

// How long an idle worker, and a caller waiting for a job's last chunks, poll before sleeping on
// a condition variable: a model's next operation usually hands out its job within microseconds,
// and waking a sleeping thread takes tens of microseconds (more in a virtual machine), as long as
// a small product takes. The poll yields the CPU between checks.
constexpr auto kPollBeforeSleeping = std::chrono::microseconds(100);

// Polls `ready` for up to kPollBeforeSleeping; returns its last answer.
template <typename Ready>
bool PollFor(const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kPollBeforeSleeping;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A persistent pool of worker threads that run the chunks of one job at a time. Chunks are
// claimed through an atomic counter, so the caller (which claims chunks too) never waits for a
// worker that has not started: it only waits for chunks that are already running.
class ThreadPool {
 public:
  static ThreadPool& Get() {
    static ThreadPool* pool = new ThreadPool();  // never destroyed: workers outlive exit
    return *pool;
  }

  // Runs body(chunk) for every chunk in [0, chunks) on the caller and up to `helpers` workers.
  // Returns false (nothing run) when another job holds the pool.
  //
  // Each participant (the caller, workers 1..helpers) owns an equal contiguous share of the
  // chunks and runs it first, then takes what is left of the others' shares: on an idle machine
  // a thread runs the same chunks every time (a product's weight blocks stay in the cache of the
  // core that read them last), on a loaded one nobody waits for a thread the OS runs late.
  bool Run(size_t chunks, size_t helpers, const std::function<void(size_t)>& body) {
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    auto job = std::make_shared<Job>(chunks, helpers + 1);
    job->body = &body;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (workers_ < helpers) {
        ++workers_;
        std::thread(&ThreadPool::WorkerLoop, this, workers_).detach();
      }
      job_ = job;
      generation_.store(generation_.load() + 1);
    }
    wake_.notify_all();
    Increment(Counter::kPoolJobs);
    Work(*job, 0);
    const auto all_finished = [&] { return job->finished.load() == job->chunks; };
    if (!PollFor(all_finished)) {
      std::unique_lock<std::mutex> lock(job->mutex);
      job->done.wait(lock, all_finished);
    }
    return true;
  }

 private:
  // One participant's share of the chunks: [next, end) not yet claimed.
  struct Share {
    std::atomic<size_t> next{0};
    size_t end = 0;
  };
  struct Job {
    Job(size_t chunk_count, size_t participant_count)
        : chunks(chunk_count), participants(participant_count), shares(new Share[participants]) {
      for (size_t i = 0; i < participants; ++i) {
        shares[i].next = chunks * i / participants;
        shares[i].end = chunks * (i + 1) / participants;
      }
    }
    const std::function<void(size_t)>* body = nullptr;
    const size_t chunks;
    const size_t participants;  // the caller and the workers 1..participants-1
    std::unique_ptr<Share[]> shares;
    std::atomic<size_t> finished{0};
    std::mutex mutex;  // taken to signal `done` (the last chunk) and to sleep on it
    std::condition_variable done;
  };

  // Participant `slot` claims and runs chunks, its own share first, until none is left. Once
  // every chunk is claimed nobody touches the body again, so a late worker holding an old job
  // only finds the shares exhausted.
  static void Work(Job& job, size_t slot) {
    for (size_t i = 0; i < job.participants; ++i) {
      Share& share = job.shares[(slot + i) % job.participants];
      for (;;) {
        const size_t chunk = share.next.fetch_add(1);
        if (chunk >= share.end) break;
        (*job.body)(chunk);
        if (job.finished.fetch_add(1) + 1 == job.chunks) {
          std::lock_guard<std::mutex> lock(job.mutex);  // the caller sleeps, or sees the count
          job.done.notify_all();
        }
      }
    }
  }

  // Worker `index` (1, 2, ...) takes part in the jobs that want at least `index` helpers.
  void WorkerLoop(size_t index) {
    BlasThreads::MarkPoolWorker();
    uint64_t seen = 0;
    for (;;) {
      const auto new_job = [&] { return generation_.load() != seen; };
      PollFor(new_job);
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, new_job);
        seen = generation_.load();
        job = job_;
      }
      if (job && index < job->participants) Work(*job, index);
    }
  }

  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;      // guards job_, workers_ and changes of generation_
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  std::atomic<uint64_t> generation_{0};  // polled by idle workers
  size_t workers_ = 0;
};

// ParallelFor with the thread count decided by the caller.
void ParallelForOn(size_t max_threads, size_t count, size_t cost_per_item,
                   const std::function<void(size_t begin, size_t end)>& body) {
  if (count == 0) return;
  const size_t work = count * std::max<size_t>(1, cost_per_item);
  size_t threads = std::min(max_threads, count);
  threads = std::min(threads, std::max<size_t>(1, work / kMinWorkPerThread));
  if (threads <= 1) {
    BlasThreads::InLoop in_loop;
    body(0, count);
    return;
  }
  // A few chunks per thread balance the load when a thread is slowed down.
  const size_t chunks = std::min(count, std::min(threads * 4, work / kMinWorkPerThread));
  const size_t per_chunk = (count + chunks - 1) / chunks;
  const size_t used_chunks = (count + per_chunk - 1) / per_chunk;
  const std::function<void(size_t)> run_chunk = [&](size_t chunk) {
    const size_t begin = chunk * per_chunk;
    body(begin, std::min(count, begin + per_chunk));
  };
  SingleThreadedBlas single_threaded;
  if (!ThreadPool::Get().Run(used_chunks, threads - 1, run_chunk)) body(0, count);
}

}  // namespace

void ParallelFor(size_t count, size_t cost_per_item,
                 const std::function<void(size_t begin, size_t end)>& body) {
  ParallelForOn(static_cast<size_t>(ThreadCount()), count, cost_per_item, body);
}

// Elements per block of the fp16 conversions shared out over the pool.
constexpr size_t kConvertBlock = 16384;

std::vector<float> HalfToFloat(const Half* data, size_t count) {
  std::vector<float> out(count);
  const uint16_t* in = reinterpret_cast<const uint16_t*>(data);
  ParallelFor((count + kConvertBlock - 1) / kConvertBlock, kConvertBlock * 2,
              [&](size_t begin, size_t end) {
                const size_t first = begin * kConvertBlock;
                const size_t last = std::min(count, end * kConvertBlock);
                vector_convert::HalfToFloat(in + first, last - first, out.data() + first);
              });
  return out;
}

void FloatToHalf(const float* data, size_t count, Half* out) {
  uint16_t* bits = reinterpret_cast<uint16_t*>(out);
  ParallelFor((count + kConvertBlock - 1) / kConvertBlock, kConvertBlock * 2,
              [&](size_t begin, size_t end) {
                const size_t first = begin * kConvertBlock;
                const size_t last = std::min(count, end * kConvertBlock);
                vector_convert::FloatToHalf(data + first, last - first, bits + first);
              });
}

void RoundToHalf(float* data, size_t count) {
  ParallelFor((count + kConvertBlock - 1) / kConvertBlock, kConvertBlock * 2,
              [&](size_t begin, size_t end) {
                const size_t first = begin * kConvertBlock;
                const size_t last = std::min(count, end * kConvertBlock);
                vector_convert::RoundToHalf(data + first, last - first);
              });
}

}  // namespace gemm
}  // namespace mock_nnapi
