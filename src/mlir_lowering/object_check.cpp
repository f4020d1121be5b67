// See object_check.h. The checks follow what RuntimeDyldELF (LLJIT's linker for x86-64 ELF in
// LLVM 16) reads without checking: it reads symbols and relocations through ELFObjectFile's
// accessors, which call report_fatal_error on an index outside its table; it switches over
// relocation types and symbol kinds with llvm_unreachable for the ones it does not know; it
// allocates every section with its size and alignment.
#include "mlir_lowering/object_check.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace trn::mlir_lowering {
namespace {

using ELFT = llvm::object::ELF64LE;
using Shdr = ELFT::Shdr;
using Sym = ELFT::Sym;

// Far above anything a group compiles to (the cache refuses entries above 64 MiB as a whole).
constexpr uint64_t kMaxAllocatedBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxAlignment = 4096;

std::string Message(llvm::Error error) { return llvm::toString(std::move(error)); }

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("malformed object: ", what)); }

// The x86-64 relocations RuntimeDyldELF resolves (processRelocationRef and
// resolveX86_64Relocation), without the TLS ones: our code has no thread-locals.
bool SupportedRelocation(uint32_t type) {
  switch (type) {
    case llvm::ELF::R_X86_64_NONE:
    case llvm::ELF::R_X86_64_64:
    case llvm::ELF::R_X86_64_32:
    case llvm::ELF::R_X86_64_32S:
    case llvm::ELF::R_X86_64_PC32:
    case llvm::ELF::R_X86_64_PC64:
    case llvm::ELF::R_X86_64_PLT32:
    case llvm::ELF::R_X86_64_GOTPCREL:
    case llvm::ELF::R_X86_64_GOTPCRELX:
    case llvm::ELF::R_X86_64_REX_GOTPCRELX:
    case llvm::ELF::R_X86_64_GOT64:
    case llvm::ELF::R_X86_64_GOTPC32:
    case llvm::ELF::R_X86_64_GOTPC64:
    case llvm::ELF::R_X86_64_GOTOFF64:
      return true;
    default:
      return false;
  }
}

// Bytes a relocation of `type` writes at its offset.
uint64_t RelocationWidth(uint32_t type) {
  switch (type) {
    case llvm::ELF::R_X86_64_NONE:
      return 0;
    case llvm::ELF::R_X86_64_64:
    case llvm::ELF::R_X86_64_PC64:
    case llvm::ELF::R_X86_64_GOT64:
    case llvm::ELF::R_X86_64_GOTPC64:
    case llvm::ELF::R_X86_64_GOTOFF64:
      return 8;
    default:
      return 4;
  }
}

// ELF fields are endian-aware wrappers: plain integers for StrCat.
template <class T>
uint64_t U(const T& field) {
  return static_cast<uint64_t>(field);
}

bool IsSpecialIndex(uint16_t shndx) { return shndx == llvm::ELF::SHN_UNDEF || shndx >= llvm::ELF::SHN_LORESERVE; }

absl::Status CheckElf(const llvm::object::ELFFile<ELFT>& elf) {
  const auto& header = elf.getHeader();
  if (header.e_type != llvm::ELF::ET_REL) return Bad(absl::StrCat("ELF type ", U(header.e_type), ", not relocatable"));
  if (header.e_shentsize != sizeof(Shdr)) return Bad(absl::StrCat("section header size ", U(header.e_shentsize)));
  auto sections_or = elf.sections();
  if (!sections_or) return Bad(absl::StrCat("section table: ", Message(sections_or.takeError())));
  const auto sections = *sections_or;
  const uint64_t nsections = sections.size();
  if (nsections == 0) return Bad("no sections");

  // Sections: names, contents inside the file, sizes and alignments the linker can allocate.
  const Shdr* symtab = nullptr;
  uint64_t allocated = 0;
  for (uint64_t i = 0; i < nsections; ++i) {
    const Shdr& s = sections[i];
    auto name = elf.getSectionName(s);
    if (!name) return Bad(absl::StrCat("section ", i, " name: ", Message(name.takeError())));
    const std::string where = absl::StrCat("section ", i, " (", name->str(), ")");
    if (s.sh_addralign > kMaxAlignment || (s.sh_addralign & (s.sh_addralign - 1)) != 0) {
      return Bad(absl::StrCat(where, ": alignment ", U(s.sh_addralign)));
    }
    if (s.sh_type != llvm::ELF::SHT_NOBITS && s.sh_type != llvm::ELF::SHT_NULL) {
      auto contents = elf.getSectionContents(s);
      if (!contents) return Bad(absl::StrCat(where, ": ", Message(contents.takeError())));
    }
    if (s.sh_size > kMaxAllocatedBytes || (allocated += s.sh_size) > kMaxAllocatedBytes) {
      return Bad(absl::StrCat(where, ": size ", U(s.sh_size)));
    }
    switch (s.sh_type) {
      case llvm::ELF::SHT_SYMTAB:
        if (symtab != nullptr) return Bad(absl::StrCat(where, ": a second symbol table"));
        symtab = &s;
        break;
      case llvm::ELF::SHT_NULL:
      case llvm::ELF::SHT_PROGBITS:
      case llvm::ELF::SHT_NOBITS:
      case llvm::ELF::SHT_STRTAB:
      case llvm::ELF::SHT_RELA:
      case llvm::ELF::SHT_NOTE:
      case llvm::ELF::SHT_INIT_ARRAY:
      case llvm::ELF::SHT_FINI_ARRAY:
      case llvm::ELF::SHT_X86_64_UNWIND:
      case llvm::ELF::SHT_LLVM_ADDRSIG:
        break;
      default:  // SHT_REL (not x86-64's), SHT_DYNSYM, SHT_SYMTAB_SHNDX, groups, ...: never ours
        return Bad(absl::StrCat(where, ": section type ", U(s.sh_type)));
    }
  }

  // Symbols: names inside the string table, defined in an existing section, of known kinds.
  if (symtab == nullptr) return Bad("no symbol table");
  auto symbols_or = elf.symbols(symtab);
  if (!symbols_or) return Bad(absl::StrCat("symbol table: ", Message(symbols_or.takeError())));
  const auto symbols = *symbols_or;
  auto strtab = elf.getStringTableForSymtab(*symtab);
  if (!strtab) return Bad(absl::StrCat("symbol names: ", Message(strtab.takeError())));
  for (uint64_t k = 0; k < symbols.size(); ++k) {
    const Sym& sym = symbols[k];
    auto name = sym.getName(*strtab);
    if (!name) return Bad(absl::StrCat("symbol ", k, " name: ", Message(name.takeError())));
    const std::string where = absl::StrCat("symbol ", k, " (", name->str(), ")");
    switch (sym.getType()) {
      case llvm::ELF::STT_NOTYPE:
      case llvm::ELF::STT_OBJECT:
      case llvm::ELF::STT_FUNC:
      case llvm::ELF::STT_SECTION:
      case llvm::ELF::STT_FILE:
        break;
      default:
        return Bad(absl::StrCat(where, ": symbol type ", int{sym.getType()}));
    }
    const uint8_t binding = sym.getBinding();
    if (binding != llvm::ELF::STB_LOCAL && binding != llvm::ELF::STB_GLOBAL && binding != llvm::ELF::STB_WEAK) {
      return Bad(absl::StrCat(where, ": binding ", int{binding}));
    }
    const uint16_t shndx = sym.st_shndx;
    if (shndx == llvm::ELF::SHN_UNDEF || shndx == llvm::ELF::SHN_ABS) {
      if (sym.getType() == llvm::ELF::STT_SECTION && k != 0) return Bad(absl::StrCat(where, ": a section symbol of no section"));
      continue;
    }
    if (IsSpecialIndex(shndx) || shndx >= nsections) {  // SHN_COMMON, SHN_XINDEX, out of range
      return Bad(absl::StrCat(where, ": section index ", shndx));
    }
    const Shdr& in = sections[shndx];
    if (sym.getType() != llvm::ELF::STT_SECTION && sym.getType() != llvm::ELF::STT_FILE &&
        (sym.st_value > in.sh_size || sym.st_size > in.sh_size - sym.st_value)) {
      return Bad(absl::StrCat(where, ": value ", U(sym.st_value), " size ", U(sym.st_size), " outside its section of ",
                              U(in.sh_size), " bytes"));
    }
  }

  // Relocations: of the symbol table, into an existing section, inside it, of known types, of
  // symbols the linker can resolve.
  for (uint64_t i = 0; i < nsections; ++i) {
    const Shdr& s = sections[i];
    if (s.sh_type != llvm::ELF::SHT_RELA) continue;
    const std::string where = absl::StrCat("relocation section ", i);
    if (s.sh_link >= nsections || &sections[s.sh_link] != symtab) {
      return Bad(absl::StrCat(where, ": symbol table index ", U(s.sh_link)));
    }
    if (s.sh_info == 0 || s.sh_info >= nsections) return Bad(absl::StrCat(where, ": target section ", U(s.sh_info)));
    const Shdr& target = sections[s.sh_info];
    if (target.sh_type == llvm::ELF::SHT_NOBITS || target.sh_type == llvm::ELF::SHT_RELA ||
        target.sh_type == llvm::ELF::SHT_SYMTAB || target.sh_type == llvm::ELF::SHT_NULL) {
      return Bad(absl::StrCat(where, ": target section ", U(s.sh_info), " of type ", U(target.sh_type)));
    }
    auto relas = elf.relas(s);
    if (!relas) return Bad(absl::StrCat(where, ": ", Message(relas.takeError())));
    uint64_t r = 0;
    for (const ELFT::Rela& rela : *relas) {
      const uint32_t type = rela.getType(false);
      const uint32_t sym_index = rela.getSymbol(false);
      const std::string at = absl::StrCat(where, " entry ", r++);
      if (!SupportedRelocation(type)) return Bad(absl::StrCat(at, ": relocation type ", type));
      const uint64_t width = RelocationWidth(type);
      if (rela.r_offset > target.sh_size || width > target.sh_size - rela.r_offset) {
        return Bad(absl::StrCat(at, ": offset ", U(rela.r_offset), " outside its section of ", U(target.sh_size), " bytes"));
      }
      if (sym_index >= symbols.size()) return Bad(absl::StrCat(at, ": symbol index ", sym_index));
      // Symbol 0 resolves to address 0: the code would jump or load through null.
      if (sym_index == 0 && type != llvm::ELF::R_X86_64_NONE) return Bad(absl::StrCat(at, ": relocation against no symbol"));
      const Sym& sym = symbols[sym_index];
      if (sym_index != 0 && sym.getType() == llvm::ELF::STT_FILE) {
        return Bad(absl::StrCat(at, ": relocation against a file symbol"));
      }
      if (sym.getType() == llvm::ELF::STT_SECTION && (sym.st_shndx == llvm::ELF::SHN_UNDEF || IsSpecialIndex(sym.st_shndx))) {
        return Bad(absl::StrCat(at, ": relocation against a section symbol of no section"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckObject(std::string_view bytes) {
  auto buffer = llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), "object");
  auto object = llvm::object::ObjectFile::createObjectFile(buffer);
  if (!object) return Bad(Message(object.takeError()));
  const auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (elf == nullptr) return Bad("not a 64-bit little-endian ELF object");
  const llvm::Triple host(llvm::sys::getProcessTriple());
  if (elf->getArch() != host.getArch()) {
    return Bad(absl::StrCat("built for ", llvm::Triple::getArchTypeName(elf->getArch()).str(), ", this host is ",
                            host.getArchName().str()));
  }
  if (host.getArch() != llvm::Triple::x86_64) {
    return absl::OkStatus();  // (the relocation checks above are x86-64's; other hosts link unchecked)
  }
  return CheckElf(elf->getELFFile());
}

}  // namespace trn::mlir_lowering
