#include "runtime/cache/entry_format.h"

#include <xxhash.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trn::runtime::cache {
namespace {

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 8);
}
void PutStr(std::string* out, absl::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}
uint64_t GetLE(absl::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}
void SetU64(std::string* out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*out)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

absl::Status Rejected(Reject r, Reject* out, absl::string_view detail) {
  *out = r;
  return absl::DataLossError(absl::StrCat(RejectName(r), ": ", detail));
}

}  // namespace

std::string Levels::Suffix() const { return absl::StrCat("O", opt, "c", codegen); }

absl::string_view RejectName(Reject reason) {
  switch (reason) {
    case Reject::kNone: return "none";
    case Reject::kTruncated: return "truncated";
    case Reject::kBadMagic: return "bad_magic";
    case Reject::kFormatVersion: return "format_version";
    case Reject::kHashMismatch: return "hash_mismatch";
    case Reject::kCompilerVersion: return "compiler_version";
    case Reject::kTarget: return "target";
    case Reject::kKeyMismatch: return "key_mismatch";
    case Reject::kInsecureOwner: return "insecure_owner";
    case Reject::kInsecureMode: return "insecure_mode";
    case Reject::kUnreadable: return "unreadable";
    case Reject::kLoadFailed: return "load_failed";
    case Reject::kNotRegularFile: return "not_regular_file";
    case Reject::kTooLarge: return "too_large";
  }
  return "?";
}

bool IsContentReject(Reject reason) {
  switch (reason) {
    case Reject::kTruncated:
    case Reject::kBadMagic:
    case Reject::kFormatVersion:
    case Reject::kHashMismatch:
    case Reject::kCompilerVersion:
    case Reject::kTarget:
    case Reject::kKeyMismatch:
    case Reject::kLoadFailed:
      return true;
    default:
      return false;
  }
}

std::string Encode(const Artifact& a, const Identity& identity) {
  std::string out(kMagic.data(), kMagic.size());
  PutU32(&out, kFormatVersion);
  PutU32(&out, 0);  // header size, patched below
  PutU64(&out, a.object.size());
  PutU64(&out, 0);  // hash, patched below
  for (int v : {a.tier, a.levels.opt, a.levels.codegen, a.num_inputs, a.num_outputs, static_cast<int>(a.kind)}) {
    PutU32(&out, static_cast<uint32_t>(v));
  }
  PutStr(&out, identity.compiler_version);
  PutStr(&out, identity.target);
  PutStr(&out, a.key_material);
  PutStr(&out, a.entry_symbol);
  const uint32_t header = static_cast<uint32_t>(out.size());
  for (int i = 0; i < 4; ++i) out[12 + i] = static_cast<char>((header >> (8 * i)) & 0xff);
  out += a.object;
  SetU64(&out, 24, XXH3_64bits(out.data() + 32, out.size() - 32));
  return out;
}

absl::StatusOr<Artifact> Decode(absl::string_view b, const Identity* expected, const std::string* key_material,
                                Reject* reject, Header* header_out, EntryKind kind) {
  Header h;
  Header& header = header_out != nullptr ? *header_out : h;
  *reject = Reject::kNone;
  if (b.size() < kFixedHeaderBytes) {
    if (b.size() >= kMagic.size() && b.substr(0, kMagic.size()) != kMagic) {
      return Rejected(Reject::kBadMagic, reject, "not a torch_trn cache entry");
    }
    return Rejected(Reject::kTruncated, reject, absl::StrCat(b.size(), " bytes, shorter than a header"));
  }
  if (b.substr(0, kMagic.size()) != kMagic) {
    return Rejected(Reject::kBadMagic, reject, "not a torch_trn cache entry");
  }
  header.format_version = static_cast<uint32_t>(GetLE(b, 8, 4));
  if (header.format_version != kFormatVersion) {
    return Rejected(Reject::kFormatVersion, reject,
                    absl::StrCat("format version ", header.format_version, ", this build reads ", kFormatVersion));
  }
  const uint64_t header_size = GetLE(b, 12, 4);
  const uint64_t object_size = GetLE(b, 16, 8);
  if (header_size < kFixedHeaderBytes || header_size > b.size() || object_size != b.size() - header_size) {
    return Rejected(Reject::kTruncated, reject,
                    absl::StrCat(b.size(), " bytes, the header says ", header_size, " + ", object_size));
  }
  if (XXH3_64bits(b.data() + 32, b.size() - 32) != GetLE(b, 24, 8)) {
    return Rejected(Reject::kHashMismatch, reject, "content hash does not verify");
  }
  const uint64_t stored_kind = GetLE(b, 52, 4);
  if (stored_kind > static_cast<uint64_t>(EntryKind::kPlans)) {
    return Rejected(Reject::kFormatVersion, reject, absl::StrCat("entry kind ", stored_kind, ", this build reads 0 and 1"));
  }
  Artifact a;
  a.kind = static_cast<EntryKind>(stored_kind);
  header.kind = a.kind;
  a.tier = static_cast<int>(GetLE(b, 32, 4));
  a.levels.opt = static_cast<int>(GetLE(b, 36, 4));
  a.levels.codegen = static_cast<int>(GetLE(b, 40, 4));
  a.num_inputs = static_cast<int>(GetLE(b, 44, 4));
  a.num_outputs = static_cast<int>(GetLE(b, 48, 4));
  header.levels = a.levels;
  header.tier = a.tier;
  size_t at = kFixedHeaderBytes;
  std::string* fields[] = {&header.identity.compiler_version, &header.identity.target, &a.key_material,
                           &a.entry_symbol};
  for (std::string* f : fields) {
    if (at + 4 > header_size || at + 4 + GetLE(b, at, 4) > header_size) {
      return Rejected(Reject::kTruncated, reject, "header strings overrun the header");
    }
    const size_t n = GetLE(b, at, 4);
    f->assign(b.data() + at + 4, n);
    at += 4 + n;
  }
  if (expected != nullptr && header.identity.compiler_version != expected->compiler_version) {
    return Rejected(Reject::kCompilerVersion, reject,
                    absl::StrCat("built by '", header.identity.compiler_version, "'"));
  }
  if (expected != nullptr && header.identity.target != expected->target) {
    return Rejected(Reject::kTarget, reject, absl::StrCat("built for '", header.identity.target, "'"));
  }
  if (key_material != nullptr && a.key_material != *key_material) {
    return Rejected(Reject::kKeyMismatch, reject, "entry belongs to another group (hash collision)");
  }
  if (key_material != nullptr && a.kind != kind) {
    return Rejected(Reject::kKeyMismatch, reject, a.kind == EntryKind::kPlans ? "a plan entry, not code" : "code, not a plan entry");
  }
  a.object.assign(b.data() + header_size, object_size);
  return a;
}

std::string EntryHash(const Identity& identity, absl::string_view key_material) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  const uint32_t version = kFormatVersion;
  XXH3_128bits_update(state, &version, sizeof version);
  for (absl::string_view part : {absl::string_view(identity.compiler_version), absl::string_view(identity.target),
                                 key_material}) {
    const uint64_t n = part.size();
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, part.data(), part.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return absl::StrFormat("%016x%016x", h.high64, h.low64);
}

}  // namespace trn::runtime::cache
