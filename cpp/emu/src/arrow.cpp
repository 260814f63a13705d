#include "mssqlcdc/emu/arrow.hpp"

#include <cstring>
#include <exception>
#include <new>

#include "mssqlcdc/error.hpp"

namespace mssqlcdc::emu {

void Buffer::reserve(std::size_t n) {
  if (n <= cap_) return;
  std::size_t cap = cap_ == 0 ? 256 : cap_;
  while (cap < n) cap *= 2;
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(64, (cap + 63) / 64 * 64));
  if (p == nullptr) throw std::bad_alloc();
  if (size_ != 0) std::memcpy(p, data_, size_);
  std::free(data_);
  data_ = p;
  cap_ = cap;
}

void Buffer::append(const void* p, std::size_t n) {
  reserve(size_ + n);
  if (n != 0) std::memcpy(data_ + size_, p, n);
  size_ += n;
}

void Buffer::append_zeros(std::size_t n) {
  reserve(size_ + n);
  std::memset(data_ + size_, 0, n);
  size_ += n;
}

ColumnBuilder::ColumnBuilder(std::string name, std::string format, Layout layout, int width)
    : name_(std::move(name)), format_(std::move(format)), layout_(layout), width_(width) {
  if (layout_ == Layout::Variable) {
    const std::int32_t zero = 0;
    offsets_.append(&zero, sizeof zero);
  }
}

void ColumnBuilder::mark(bool valid) {
  if (length_ % 8 == 0) validity_.append_zeros(1);
  if (valid) validity_.data()[length_ / 8] |= static_cast<std::uint8_t>(1u << (length_ % 8));
  else ++null_count_;
}

void ColumnBuilder::append_null() {
  switch (layout_) {
    case Layout::Bool:
      if (length_ % 8 == 0) data_.append_zeros(1);
      break;
    case Layout::Fixed: data_.append_zeros(static_cast<std::size_t>(width_)); break;
    case Layout::Variable: {
      const auto end = static_cast<std::int32_t>(data_.size());
      offsets_.append(&end, sizeof end);
      break;
    }
  }
  mark(false);
  ++length_;
}

void ColumnBuilder::append_bool(bool v) {
  if (length_ % 8 == 0) data_.append_zeros(1);
  if (v) data_.data()[length_ / 8] |= static_cast<std::uint8_t>(1u << (length_ % 8));
  mark(true);
  ++length_;
}

void ColumnBuilder::append_fixed(const void* p) {
  data_.append(p, static_cast<std::size_t>(width_));
  mark(true);
  ++length_;
}

void ColumnBuilder::append_bytes(const void* p, std::size_t n) {
  data_.append(p, n);
  const auto end = static_cast<std::int32_t>(data_.size());
  offsets_.append(&end, sizeof end);
  mark(true);
  ++length_;
}

namespace {

struct SchemaPrivate {
  std::string format;
  std::string name;
  std::vector<ArrowSchema*> child_ptrs;
  std::vector<std::unique_ptr<ArrowSchema>> children;
};

void release_schema(ArrowSchema* s) {
  if (s == nullptr || s->release == nullptr) return;
  auto* priv = static_cast<SchemaPrivate*>(s->private_data);
  for (auto& c : priv->children) {
    if (c->release != nullptr) c->release(c.get());
  }
  delete priv;  // owned through private_data, as the C ABI requires
  s->release = nullptr;
}

void fill_schema(ArrowSchema* out, std::string format, std::string name, std::int64_t flags) {
  auto priv = std::make_unique<SchemaPrivate>();
  priv->format = std::move(format);
  priv->name = std::move(name);
  out->format = priv->format.c_str();
  out->name = priv->name.c_str();
  out->metadata = nullptr;
  out->flags = flags;
  out->n_children = 0;
  out->children = nullptr;
  out->dictionary = nullptr;
  out->release = &release_schema;
  out->private_data = priv.release();
}

struct ArrayPrivate {
  std::vector<Buffer> buffers;
  std::vector<const void*> buffer_ptrs;
  std::vector<std::unique_ptr<ArrowArray>> children;
  std::vector<ArrowArray*> child_ptrs;
};

void release_array(ArrowArray* a) {
  if (a == nullptr || a->release == nullptr) return;
  auto* priv = static_cast<ArrayPrivate*>(a->private_data);
  for (auto& c : priv->children) {
    if (c->release != nullptr) c->release(c.get());
  }
  delete priv;
  a->release = nullptr;
}

}  // namespace

void ColumnBuilder::export_schema(ArrowSchema* out) const { fill_schema(out, format_, name_, ARROW_FLAG_NULLABLE); }

void ColumnBuilder::export_array(ArrowArray* out) {
  auto priv = std::make_unique<ArrayPrivate>();
  priv->buffers.push_back(std::move(validity_));
  if (layout_ == Layout::Variable) priv->buffers.push_back(std::move(offsets_));
  priv->buffers.push_back(std::move(data_));
  for (auto& b : priv->buffers) priv->buffer_ptrs.push_back(b.data());
  if (null_count_ == 0) priv->buffer_ptrs[0] = nullptr;
  out->length = length_;
  out->null_count = null_count_;
  out->offset = 0;
  out->n_buffers = static_cast<std::int64_t>(priv->buffer_ptrs.size());
  out->n_children = 0;
  out->buffers = priv->buffer_ptrs.data();
  out->children = nullptr;
  out->dictionary = nullptr;
  out->release = &release_array;
  out->private_data = priv.release();
  validity_ = Buffer();
  data_ = Buffer();
  offsets_ = Buffer();
  length_ = 0;
  null_count_ = 0;
  if (layout_ == Layout::Variable) {
    const std::int32_t zero = 0;
    offsets_.append(&zero, sizeof zero);
  }
}

void export_struct_schema(const std::vector<ColumnBuilder>& columns, ArrowSchema* out) {
  fill_schema(out, "+s", "", 0);
  auto* priv = static_cast<SchemaPrivate*>(out->private_data);
  for (const auto& c : columns) {
    priv->children.push_back(std::make_unique<ArrowSchema>());
    c.export_schema(priv->children.back().get());
    priv->child_ptrs.push_back(priv->children.back().get());
  }
  out->n_children = static_cast<std::int64_t>(columns.size());
  out->children = priv->child_ptrs.data();
}

void export_batch(std::vector<ColumnBuilder>& columns, ArrowArray* out) {
  auto priv = std::make_unique<ArrayPrivate>();
  const std::int64_t length = columns.empty() ? 0 : columns.front().length();
  for (auto& c : columns) {
    priv->children.push_back(std::make_unique<ArrowArray>());
    c.export_array(priv->children.back().get());
    priv->child_ptrs.push_back(priv->children.back().get());
  }
  priv->buffer_ptrs.push_back(nullptr);
  out->length = length;
  out->null_count = 0;
  out->offset = 0;
  out->n_buffers = 1;
  out->n_children = static_cast<std::int64_t>(columns.size());
  out->buffers = priv->buffer_ptrs.data();
  out->children = priv->child_ptrs.data();
  out->dictionary = nullptr;
  out->release = &release_array;
  out->private_data = priv.release();
}

namespace {

struct StreamPrivate {
  std::unique_ptr<BatchSource> source;
  std::string error;
  bool done = false;
};

int stream_schema(ArrowArrayStream* s, ArrowSchema* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  try {
    export_struct_schema(p->source->columns(), out);
    return 0;
  } catch (const std::exception& e) {
    p->error = e.what();
    return EIO;
  }
}

int stream_next(ArrowArrayStream* s, ArrowArray* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  try {
    if (p->done || !p->source->next_batch()) {
      p->done = true;
      p->source.reset();  // ends the read transaction at once
      out->release = nullptr;
      return 0;
    }
    export_batch(p->source->columns(), out);
    return 0;
  } catch (const std::exception& e) {
    p->error = e.what();
    p->done = true;
    return EIO;
  }
}

const char* stream_error(ArrowArrayStream* s) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  return p->error.empty() ? nullptr : p->error.c_str();
}

void stream_release(ArrowArrayStream* s) {
  if (s == nullptr || s->release == nullptr) return;
  delete static_cast<StreamPrivate*>(s->private_data);
  s->release = nullptr;
}

}  // namespace

void export_stream(std::unique_ptr<BatchSource> source, ArrowArrayStream* out) {
  auto priv = std::make_unique<StreamPrivate>();
  priv->source = std::move(source);
  out->get_schema = &stream_schema;
  out->get_next = &stream_next;
  out->get_last_error = &stream_error;
  out->release = &stream_release;
  out->private_data = priv.release();
}

}  // namespace mssqlcdc::emu
