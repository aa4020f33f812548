// The heap of a compiled network (codegen/model_runtime/model_alloc.c, issue #32): a freed buffer
// comes back for the next allocation of its size (no page faults per call of the network), sizes
// and alignments are kept apart, and alignment is honoured.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

extern "C" {
void* _mlir_memref_to_llvm_alloc(uint64_t size);
void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void* p);
}

TEST(ModelHeap, AFreedBufferIsReusedForTheSameSize) {
  void* a = _mlir_memref_to_llvm_alloc(3 << 20);
  ASSERT_NE(a, nullptr);
  static_cast<char*>(a)[(3 << 20) - 1] = 1;  // all of it is usable
  _mlir_memref_to_llvm_free(a);
  void* b = _mlir_memref_to_llvm_alloc(3 << 20);
  EXPECT_EQ(a, b);
  void* c = _mlir_memref_to_llvm_alloc(3 << 20);  // the kept one is taken: a new one
  EXPECT_NE(c, b);
  _mlir_memref_to_llvm_free(b);
  void* d = _mlir_memref_to_llvm_alloc(1 << 20);  // another size: not the kept 3 MiB buffer
  EXPECT_NE(d, b);
  _mlir_memref_to_llvm_free(c);
  _mlir_memref_to_llvm_free(d);
}

TEST(ModelHeap, AlignmentIsHonouredAndKeptApart) {
  for (uint64_t align : {64u, 128u, 4096u}) {
    void* p = _mlir_memref_to_llvm_aligned_alloc(align, 1000);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
    _mlir_memref_to_llvm_free(p);
  }
  void* q = _mlir_memref_to_llvm_aligned_alloc(4096, 1000);  // the 4096-aligned one, not the 64-aligned one
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 4096, 0u);
  _mlir_memref_to_llvm_free(q);
  _mlir_memref_to_llvm_free(nullptr);  // as free(NULL)
}

TEST(ModelHeap, ThreadsAllocateAndFreeConcurrently) {
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < 2000; ++i) {
        auto* p = static_cast<int*>(_mlir_memref_to_llvm_alloc(uint64_t(4096 * (1 + (i + t) % 5))));
        p[0] = i;  // each thread owns what it got
        EXPECT_EQ(p[0], i);
        _mlir_memref_to_llvm_free(p);
      }
    });
  for (auto& t : ts) t.join();
}
