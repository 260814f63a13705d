// arrow.hpp: the Arrow C Data Interface (the stable ABI of two structs and a stream, declared
// here as Arrow publishes them, without libarrow), column builders with 64-byte aligned
// buffers, and the export of batches as an ArrowArrayStream whose release frees everything.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
extern "C" {
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
}
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
extern "C" {
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};
}
#endif

namespace mssqlcdc::emu {

// A growable buffer aligned to 64 bytes, as the Arrow format recommends. Move-only; growth
// that cannot be allocated throws std::bad_alloc.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  // Moves take the memory and leave `o` empty.
  Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) {
    o.data_ = nullptr, o.size_ = o.cap_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = o.data_, size_ = o.size_, cap_ = o.cap_;
      o.data_ = nullptr, o.size_ = o.cap_ = 0;
    }
    return *this;
  }
  // Frees the memory.
  ~Buffer() { std::free(data_); }
  // Appends `n` bytes copied from `p`, or `n` zero bytes. Pointers from data() are invalid after.
  void append(const void* p, std::size_t n);
  void append_zeros(std::size_t n);
  // The bytes so far (nullptr while nothing was ever appended) and their count.
  [[nodiscard]] std::uint8_t* data() { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  // Forgets the bytes but keeps the memory.
  void clear() { size_ = 0; }

 private:
  void reserve(std::size_t n);
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

// Builds one nullable column of a batch. Physical layouts: bitmap (bool), fixed width N bytes,
// or variable (int32 offsets + data). The append calls must match the layout (append_bool for
// Bool, append_fixed for Fixed, append_bytes for Variable); nothing checks it. Not thread-safe.
class ColumnBuilder {
 public:
  enum class Layout : std::uint8_t { Bool, Fixed, Variable };
  // A column named `name` of Arrow format string `format` ("l", "u", "tsu:", ...); `width` is
  // the value size in bytes for Fixed and unused otherwise.
  ColumnBuilder(std::string name, std::string format, Layout layout, int width);

  // Appends one value: a NULL (any layout), a boolean, `width` bytes from `p`, or `n` bytes
  // from `p`. A Variable column's data must stay below 2 GiB per batch (int32 offsets).
  void append_null();
  void append_bool(bool v);
  void append_fixed(const void* p);  // `width` bytes
  void append_bytes(const void* p, std::size_t n);
  // Rows appended since the last export.
  [[nodiscard]] std::int64_t length() const { return length_; }
  // Bytes held since the last export, for batch size limits.
  [[nodiscard]] std::size_t bytes() const { return validity_.size() + data_.size() + offsets_.size(); }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& format() const { return format_; }

  // Fills `out` with the column's schema (nullable); the consumer releases it.
  void export_schema(ArrowSchema* out) const;
  void export_array(ArrowArray* out);  // moves the buffers out; the builder starts empty again

 private:
  void mark(bool valid);
  std::string name_;
  std::string format_;
  Layout layout_;
  int width_;
  std::int64_t length_ = 0;
  std::int64_t null_count_ = 0;
  Buffer validity_;
  Buffer data_;
  Buffer offsets_;
};

// A producer of batches: fill the builders with up to one batch of rows; false at the end.
class BatchSource {
 public:
  // Destroying a source ends its read (and its read transaction, if it holds one).
  virtual ~BatchSource() = default;
  // The builders, one per column of the stream; the same set on every call.
  virtual std::vector<ColumnBuilder>& columns() = 0;
  virtual bool next_batch() = 0;  // leaves its rows in columns(); throws on failure
};

// Exports `source` as a stream; the consumer owns it and calls release. A failing get_next or
// get_schema returns EIO and get_last_error() gives the Error's message; the stream ends then.
// The source is destroyed at the end of the stream, so get_schema must come before that. A
// stream is used by one thread at a time.
void export_stream(std::unique_ptr<BatchSource> source, ArrowArrayStream* out);
// Exports the builders' current rows as one struct array (a record batch); the builders start
// empty again. All builders must hold the same number of rows.
void export_batch(std::vector<ColumnBuilder>& columns, ArrowArray* out);
// The schema of export_batch()'s arrays: a struct of the builders' columns.
void export_struct_schema(const std::vector<ColumnBuilder>& columns, ArrowSchema* out);

}  // namespace mssqlcdc::emu
