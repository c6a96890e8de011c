// The safetensors reader and writer: see safetensors.h. Every number in the file is decoded from its bytes
// explicitly (little-endian, whatever the host), and every size taken from the header is checked against the bytes
// actually there before anything is allocated or read with it.
#include "exec/data/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "core/untrusted_text.h"

namespace shardscope::exec {

namespace {

using nlohmann::json;

// ---- little-endian bytes ----

std::uint64_t load_le(const std::byte* p, int bytes) {
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | std::to_integer<std::uint64_t>(p[i]);
  return value;
}

void store_le(std::uint64_t value, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// a × b, or false when it does not fit 64 bits (sizes and offsets come from untrusted headers).
bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

// ---- dtypes ----

enum class Dtype { F32, F16, BF16, F64 };

struct DtypeInfo {
  const char* name;
  Dtype dtype;
  std::uint64_t size;
};
constexpr std::array<DtypeInfo, 4> kReadDtypes{{
    {"F32", Dtype::F32, 4}, {"F16", Dtype::F16, 2}, {"BF16", Dtype::BF16, 2}, {"F64", Dtype::F64, 8}}};
// The format's other dtypes: named as "not supported" rather than "unknown", so that a user knows the file is fine
// and this reader is what falls short.
constexpr std::array<const char*, 16> kOtherDtypes{"BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64",
                                                    "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
                                                    "C64"};

// IEEE half -> float, exactly (every half is a float): subnormals become normal floats, NaN keeps its payload.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1F;
  const std::uint32_t mantissa = h & 0x3FF;
  if (exponent == 0) {
    // mantissa × 2^-24; exact, since mantissa < 2^10 and 2^-24 is a normal float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

float decode_value(Dtype dtype, const std::byte* p) {
  switch (dtype) {
    case Dtype::F32: return std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 4)));
    case Dtype::F16: return half_to_float(static_cast<std::uint16_t>(load_le(p, 2)));
    case Dtype::BF16: return std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 2)) << 16);
    case Dtype::F64: return static_cast<float>(std::bit_cast<double>(load_le(p, 8)));  // round to nearest
  }
  return 0.0f;
}

// ---- messages ----

// A tensor name for messages: quoted, control characters escaped and cut (core/untrusted_text.h), so that a
// megabyte-long key cannot make a megabyte-long message nor an escape sequence reach the terminal.
std::string quoted(const std::string& name) { return "\"" + printable(name, 80) + "\""; }

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// ---- the header ----

struct Entry {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::uint64_t element_size = 4;
  std::vector<std::int64_t> shape;
  std::uint64_t numel = 1;
  std::uint64_t begin = 0, end = 0;
};

// A JSON integer as uint64; false for other types. `negative` says an integer was there but below zero.
bool json_unsigned(const json& value, std::uint64_t& out, bool& negative) {
  negative = false;
  if (!value.is_number_integer()) return false;
  if (value.is_number_unsigned()) {
    out = value.get<std::uint64_t>();
    return true;
  }
  const std::int64_t signed_value = value.get<std::int64_t>();
  if (signed_value < 0) {
    negative = true;
    return false;
  }
  out = static_cast<std::uint64_t>(signed_value);
  return true;
}

Entry parse_entry(const std::string& name, const json& value, const std::string& source, std::uint64_t buffer_size) {
  const std::string at = source + ": tensor " + quoted(name) + ": ";
  const auto fail = [&](const std::string& problem) { throw SafetensorsError(at + problem); };
  if (!value.is_object()) fail("its entry is not an object (got " + describe_json_value(value) + ")");
  Entry entry;
  entry.name = name;

  const auto dtype_it = value.find("dtype");
  if (dtype_it == value.end()) fail("has no \"dtype\"");
  if (!dtype_it->is_string()) fail("\"dtype\" is not a string (got " + describe_json_value(*dtype_it) + ")");
  const auto shape_it = value.find("shape");
  if (shape_it == value.end()) fail("has no \"shape\"");
  if (!shape_it->is_array()) fail("\"shape\" is not an array (got " + describe_json_value(*shape_it) + ")");
  const auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end()) fail("has no \"data_offsets\"");
  if (!offsets_it->is_array() || offsets_it->size() != 2)
    fail("\"data_offsets\" is not an array of two integers (got " + describe_json_value(*offsets_it) + ")");

  // Shape: non-negative integers that fit int64 (PyTorch's sizes). numel is 0 when any dimension is 0, whatever
  // the others (the product is computed only over non-zero dimensions, so it cannot overflow before the 0).
  bool has_zero = false;
  std::uint64_t product = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < shape_it->size(); ++i) {
    const json& dim = (*shape_it)[i];
    std::uint64_t size = 0;
    bool negative = false;
    if (!json_unsigned(dim, size, negative)) {
      if (negative) fail("\"shape\" has a negative dimension (" + describe_json_value(dim) + " at index " +
                         std::to_string(i) + ")");
      fail("\"shape\" is not an array of integers (index " + std::to_string(i) + " is " + describe_json_value(dim) +
           ")");
    }
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail("\"shape\" dimension " + std::to_string(size) + " at index " + std::to_string(i) + " is too large");
    entry.shape.push_back(static_cast<std::int64_t>(size));
    if (size == 0) has_zero = true;
    else if (!overflow && !checked_mul(product, size, product)) overflow = true;
  }
  const std::string shape = shape_text(entry.shape);

  std::array<std::uint64_t, 2> offsets{};
  for (std::size_t i = 0; i < 2; ++i) {
    bool negative = false;
    if (!json_unsigned((*offsets_it)[i], offsets[i], negative))
      fail("\"data_offsets\" is not an array of two non-negative integers (index " + std::to_string(i) + " is " +
           describe_json_value((*offsets_it)[i]) + ")");
  }
  entry.begin = offsets[0];
  entry.end = offsets[1];

  const std::string dtype = dtype_it->get<std::string>();
  const auto known = std::find_if(kReadDtypes.begin(), kReadDtypes.end(),
                                  [&](const DtypeInfo& info) { return dtype == info.name; });
  if (known == kReadDtypes.end()) {
    const bool other = std::find(kOtherDtypes.begin(), kOtherDtypes.end(), dtype) != kOtherDtypes.end();
    fail((other ? "dtype " + dtype + " is not supported" : "unknown dtype " + quoted(dtype)) +
         " (F32, F16, BF16 and F64 are read)");
  }
  entry.dtype = known->dtype;
  entry.element_size = known->size;

  entry.numel = has_zero ? 0 : product;
  std::uint64_t bytes = 0;
  if ((!has_zero && overflow) || !checked_mul(entry.numel, entry.element_size, bytes))
    fail("shape " + shape + " of " + dtype + " is too large: its size in bytes overflows 64 bits");
  const std::string offsets_text = "data_offsets " + range_text(entry.begin, entry.end);
  if (entry.end < entry.begin) fail(offsets_text + ": the end is before the begin");
  if (entry.end > buffer_size)
    fail(offsets_text + " go beyond the data buffer of " + std::to_string(buffer_size) + " bytes");
  if (entry.end - entry.begin != bytes)
    fail(offsets_text + " hold " + std::to_string(entry.end - entry.begin) + " bytes, but shape " + shape + " of " +
         dtype + " needs " + std::to_string(bytes) + " (size mismatch)");
  return entry;
}

void check_metadata(const json& metadata, const std::string& source) {
  if (!metadata.is_object())
    throw SafetensorsError(source + ": \"__metadata__\" is not an object of strings (got " +
                           describe_json_value(metadata) + ")");
  for (const auto& [key, value] : metadata.items())
    if (!value.is_string())
      throw SafetensorsError(source + ": \"__metadata__\" value of " + quoted(key) + " is not a string (got " +
                             describe_json_value(value) + ")");
}

// ---- writing ----

// A JSON string literal; nlohmann escapes quotes, backslashes and control characters, and refuses invalid UTF-8.
std::string json_string(const std::string& text, const std::string& path, const std::string& what) {
  try {
    return json(text).dump();
  } catch (const json::exception&) {
    throw SafetensorsError("cannot write " + path + ": " + what + " is not valid UTF-8");
  }
}

std::string os_error(int error) { return std::strerror(error); }

// Deletes the temporary file unless released (every failure after it was created).
class TempFile {
 public:
  TempFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }
  // Closes the descriptor; the OS error of close (a delayed write error on some file systems), or 0.
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
  int fd_;
};

void write_all(int fd, const char* data, std::size_t size, const std::string& path, const std::string& temp) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw SafetensorsError("cannot write " + path + ": writing " + temp + " failed: " + os_error(errno));
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

}  // namespace

std::vector<SafetensorsTensor> parse_safetensors(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < 8)
    throw SafetensorsError(source + ": is " + std::to_string(bytes.size()) +
                           " bytes, shorter than the 8-byte header size a safetensors file starts with");
  const std::uint64_t header_size = load_le(bytes.data(), 8);
  const std::uint64_t after_size = bytes.size() - 8;
  if (header_size > kMaxSafetensorsHeaderBytes)
    throw SafetensorsError(source + ": header size " + std::to_string(header_size) + " is over the limit of " +
                           std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (header_size > after_size)
    throw SafetensorsError(source + ": header size " + std::to_string(header_size) +
                           " goes beyond the end of the file (" + std::to_string(after_size) +
                           " bytes follow the 8-byte size)");
  const std::uint64_t buffer_size = after_size - header_size;

  // Duplicate keys are refused by the JSON reader: a tensor named twice is ambiguous (readers disagree on which
  // copy wins), and the reference validator refuses it too.
  const std::string text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(header_size));
  json header;
  try {
    header = parse_json_input(text, source + " (header)", {.reject_duplicate_keys = true, .trailing_spaces_only = true});
  } catch (const JsonInputError& error) {
    throw SafetensorsError(error.what());
  }
  if (!header.is_object())
    throw SafetensorsError(source + ": the header is not a JSON object (got " + describe_json_value(header) + ")");
  // The format (safetensors 0.4 README) says the header MUST begin with '{' and MAY be padded with spaces (0x20).
  if (text[0] != '{')
    throw SafetensorsError(source + ": the header does not begin with '{' (the safetensors format requires it)");

  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      check_metadata(value, source);
      continue;
    }
    entries.push_back(parse_entry(name, value, source, buffer_size));
  }

  // The ranges, sorted, must tile the buffer: no byte outside a tensor (hidden data) and none in two.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    const std::string at =
        source + ": tensor " + quoted(entry.name) + ": data_offsets " + range_text(entry.begin, entry.end);
    if (entry.begin > covered)
      throw SafetensorsError(at + " leave a gap: bytes [" + std::to_string(covered) + ", " +
                             std::to_string(entry.begin) + ") of the data buffer belong to no tensor" +
                             (previous ? " (after tensor " + quoted(previous->name) + ")" : std::string()));
    if (entry.begin < covered)
      throw SafetensorsError(at + " overlap tensor " + quoted(previous->name) + " " +
                             range_text(previous->begin, previous->end));
    covered = entry.end;
    previous = &entry;
  }
  if (covered != buffer_size)
    throw SafetensorsError(source + ": bytes [" + std::to_string(covered) + ", " + std::to_string(buffer_size) +
                           ") at the end of the data buffer belong to no tensor (a gap)");

  // Only now, with every size checked against the bytes present, allocate.
  const std::byte* data = bytes.data() + 8 + header_size;
  std::vector<SafetensorsTensor> tensors;
  tensors.reserve(entries.size());
  for (Entry& entry : entries) {
    SafetensorsTensor tensor{std::move(entry.name), std::move(entry.shape), {}};
    tensor.values.resize(static_cast<std::size_t>(entry.numel));
    const std::byte* p = data + entry.begin;
    for (float& value : tensor.values) {
      value = decode_value(entry.dtype, p);
      p += entry.element_size;
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

std::vector<SafetensorsTensor> read_safetensors(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(path + ": cannot be opened: " + os_error(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw SafetensorsError(path + ": cannot be read: " + os_error(errno));
  // Only regular files: a FIFO or /dev/zero has no size to check against and may never end.
  if (!S_ISREG(info.st_mode)) throw SafetensorsError(path + ": is not a regular file");
  // The buffer is sized by the file system's size of the file, not by anything the file says about itself.
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw SafetensorsError(path + ": cannot be read: " + os_error(errno));
    }
    if (got == 0) break;  // shrank while read: parse what is there (its checks catch a cut file)
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return parse_safetensors(bytes, path);
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // The whole header first, so that a bad tensor is refused before any file exists.
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += (first ? "" : ",") + json_string(key, path, "metadata key " + quoted(key)) + ":" +
                json_string(value, path, "the metadata value of " + quoted(key));
      first = false;
    }
    header += "}";
  }
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const SafetensorsTensor& tensor : tensors) {
    const std::string at = "cannot write " + path + ": tensor " + quoted(tensor.name) + ": ";
    if (tensor.name == "__metadata__") throw SafetensorsError(at + "the name is reserved for the metadata");
    if (!names.insert(tensor.name).second) throw SafetensorsError(at + "the name is given twice");
    std::uint64_t numel = 1;
    bool overflow = false;
    std::string shape = "[";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
      const std::int64_t dim = tensor.shape[i];
      if (dim < 0) throw SafetensorsError(at + "shape " + shape_text(tensor.shape) + " has a negative dimension");
      if (!checked_mul(numel, static_cast<std::uint64_t>(dim), numel)) overflow = true;
      shape += (i ? "," : "") + std::to_string(dim);
    }
    shape += "]";
    if (overflow || numel != tensor.values.size())
      throw SafetensorsError(at + "shape " + shape_text(tensor.shape) + " does not match its " +
                             std::to_string(tensor.values.size()) + " values");
    const std::uint64_t bytes = numel * 4;  // numel = values.size(): no overflow
    header += std::string(header.size() > 1 ? "," : "") +
              json_string(tensor.name, path, "tensor name " + quoted(tensor.name)) +
              ":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // Pad with spaces (JSON whitespace) so that the data, after the 8-byte size and the header, starts 8-byte
  // aligned, as the reference writer does: a reader may then map the floats in place.
  header.append((8 - header.size() % 8) % 8, ' ');

  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw SafetensorsError("cannot write " + path + ": cannot create " + temp + ": " + os_error(errno));
  TempFile file(temp, fd);
  char size_bytes[8];
  store_le(header.size(), 8, size_bytes);
  write_all(fd, size_bytes, 8, path, temp);
  write_all(fd, header.data(), header.size(), path, temp);
  // The floats in little-endian order, decoded from their bits (not a memcpy of host memory), in 64 KiB chunks.
  std::vector<char> chunk;
  chunk.reserve(64 * 1024);
  for (const SafetensorsTensor& tensor : tensors) {
    for (const float value : tensor.values) {
      chunk.resize(chunk.size() + 4);
      store_le(std::bit_cast<std::uint32_t>(value), 4, chunk.data() + chunk.size() - 4);
      if (chunk.size() + 4 > chunk.capacity()) {
        write_all(fd, chunk.data(), chunk.size(), path, temp);
        chunk.clear();
      }
    }
  }
  write_all(fd, chunk.data(), chunk.size(), path, temp);
  if (const int error = file.close(); error != 0)
    throw SafetensorsError("cannot write " + path + ": closing " + temp + " failed: " + os_error(error));
  if (::rename(temp.c_str(), path.c_str()) != 0)
    throw SafetensorsError("cannot write " + path + ": renaming " + temp + " to it failed: " + os_error(errno));
  file.release();
}

}  // namespace shardscope::exec
