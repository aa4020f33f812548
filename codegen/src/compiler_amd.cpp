// AMD-specific steps of the GPU route: the ld.lld prefix MLIR's ROCDL serializer runs, and the
// kernel metadata (registers, LDS, scratch) read back from an HSACO code object.
#include "compiler_internal.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

namespace sextant {
namespace detail {

// MLIR's ROCDL serializer runs <toolkit>/llvm/bin/ld.lld. A private prefix whose ld.lld is the
// lld 22 this build found (lld 14 rejects code object v6); $SEXTANT_ROCM_TOOLKIT overrides it.
std::string rocmToolkitDir() {
  if (const char* e = std::getenv("SEXTANT_ROCM_TOOLKIT")) return e;
  std::string dir = (std::filesystem::temp_directory_path() / ("sextant-rocm-" + std::to_string(getuid()))).string();
  std::filesystem::path link = std::filesystem::path(dir) / "llvm/bin/ld.lld";
  std::error_code ec;
  if (!std::filesystem::exists(link, ec)) {
    std::filesystem::create_directories(link.parent_path(), ec);
    std::filesystem::path tmp = link;
    tmp += "." + std::to_string(getpid());
    std::filesystem::create_symlink(SEXTANT_LLD, tmp, ec);
    std::filesystem::rename(tmp, link, ec);  // atomic: parallel compilers may race here
  }
  return dir;
}

}  // namespace detail

Result<std::map<std::string, int64_t>> readAmdgpuMetadata(const std::string& bytes) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bytes), "hsaco", false);
  auto obj = llvm::object::ELF64LEObjectFile::create(buf->getMemBufferRef());
  if (!obj) return Error{"not an ELF code object: " + llvm::toString(obj.takeError())};
  const auto& elf = obj->getELFFile();
  auto phdrs = elf.program_headers();
  if (!phdrs) return Error{"no program headers: " + llvm::toString(phdrs.takeError())};
  for (const auto& ph : *phdrs) {
    if (ph.p_type != llvm::ELF::PT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (auto note : elf.notes(ph, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA) continue;
      auto desc = note.getDesc(ph.p_align);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(llvm::StringRef(reinterpret_cast<const char*>(desc.data()), desc.size()), false))
        return Error{"malformed AMDGPU metadata note"};
      auto& root = doc.getRoot();
      if (root.getKind() != llvm::msgpack::Type::Map) return Error{"AMDGPU metadata is not a map"};
      auto& kernels = root.getMap()["amdhsa.kernels"];
      if (kernels.getKind() != llvm::msgpack::Type::Array || kernels.getArray().size() == 0)
        return Error{"AMDGPU metadata lists no kernel"};
      auto& k = kernels.getArray()[0];
      if (k.getKind() != llvm::msgpack::Type::Map) return Error{"AMDGPU kernel metadata is not a map"};
      std::map<std::string, int64_t> out;
      for (auto& [key, val] : k.getMap()) {
        if (key.getKind() != llvm::msgpack::Type::String) continue;
        std::string name = key.getString().str();
        if (!name.empty() && name[0] == '.') name = name.substr(1);
        if (val.getKind() == llvm::msgpack::Type::Int) out[name] = val.getInt();
        else if (val.getKind() == llvm::msgpack::Type::UInt) out[name] = int64_t(val.getUInt());
      }
      llvm::consumeError(std::move(err));
      return out;
    }
    if (err) return Error{"bad note segment: " + llvm::toString(std::move(err))};
  }
  return Error{"the code object has no AMDGPU metadata note"};
}

}  // namespace sextant
