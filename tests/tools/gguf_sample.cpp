#include "gguf_sample.hpp"

#include <random>

namespace polyinfer::testing {
namespace {

template <typename T>
GgufValue random_array(std::mt19937_64& rng, GgufValueType elem, size_t n) {
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::normal_distribution<double>(0, 1e3)(rng));
    } else {
      x = static_cast<T>(rng());
    }
  }
  return GgufValue::array<T>(elem, v);
}

void add_metadata(std::mt19937_64& rng, GgufWriter& w) {
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("sample.u8", GgufValue::u8(static_cast<uint8_t>(rng())));
  w.set("sample.i8", GgufValue::i8(static_cast<int8_t>(rng())));
  w.set("sample.u16", GgufValue::u16(static_cast<uint16_t>(rng())));
  w.set("sample.i16", GgufValue::i16(static_cast<int16_t>(rng())));
  w.set("sample.u32", GgufValue::u32(static_cast<uint32_t>(rng())));
  w.set("sample.i32", GgufValue::i32(static_cast<int32_t>(rng())));
  w.set("sample.f32", GgufValue::f32(std::normal_distribution<float>(0, 100)(rng)));
  w.set("sample.bool", GgufValue::boolean(rng() & 1));
  w.set("sample.u64", GgufValue::u64(rng()));
  w.set("sample.i64", GgufValue::i64(static_cast<int64_t>(rng())));
  w.set("sample.f64", GgufValue::f64(std::normal_distribution<double>(0, 1e6)(rng)));
  w.set("sample.string", GgufValue::string("héllo ▁wörld " + std::to_string(rng() % 1000)));
  w.set("sample.arr_u8", random_array<uint8_t>(rng, GgufValueType::UINT8, 17));
  w.set("sample.arr_i16", random_array<int16_t>(rng, GgufValueType::INT16, 9));
  w.set("sample.arr_i32", random_array<int32_t>(rng, GgufValueType::INT32, 33));
  w.set("sample.arr_f32", random_array<float>(rng, GgufValueType::FLOAT32, 50));
  w.set("sample.arr_u64", random_array<uint64_t>(rng, GgufValueType::UINT64, 5));
  w.set("sample.arr_f64", random_array<double>(rng, GgufValueType::FLOAT64, 4));
  const std::vector<uint8_t> bools = {1, 0, 1, 1, 0};
  w.set("sample.arr_bool", GgufValue::array<uint8_t>(GgufValueType::BOOL, bools));
  w.set("sample.arr_str", GgufValue::string_array({"<s>", "▁the", "", "\xe2\x96\x81x y"}));
  w.set("sample.nested",
        GgufValue::nested_array({random_array<int32_t>(rng, GgufValueType::INT32, 3),
                                 random_array<int32_t>(rng, GgufValueType::INT32, 2)}));
}

}  // namespace

std::vector<std::vector<uint8_t>> build_sample(uint64_t seed, GgufWriter& w) {
  std::mt19937_64 rng(seed);
  add_metadata(rng, w);
  const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,   GgmlType::Q4_0,
                            GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q8_0,
                            GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,   GgmlType::Q5_K,
                            GgmlType::Q6_K, GgmlType::Q8_1, GgmlType::IQ4_NL, GgmlType::I32};
  std::vector<std::vector<uint8_t>> data;
  int i = 0;
  for (GgmlType t : types) {
    const int64_t ne0 = traits(t).block_size * static_cast<int64_t>(1 + rng() % 3);
    const int64_t ne1 = 1 + static_cast<int64_t>(rng() % 4);
    const std::string name = "blk." + std::to_string(i++) + "." + std::string(type_name(t));
    if (i % 3 == 0) {
      w.add_tensor(name, t, {ne0, ne1, 2});
    } else {
      w.add_tensor(name, t, {ne0, ne1});
    }
    std::vector<uint8_t> bytes(w.tensors().back().n_bytes);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    data.push_back(std::move(bytes));
  }
  return data;
}

std::vector<uint8_t> sample_bytes(uint64_t seed, uint32_t alignment) {
  GgufWriter w(alignment);
  const auto data = build_sample(seed, w);
  VectorSink sink;
  w.begin(sink);
  for (const auto& d : data) w.write_data(d.data(), d.size());
  w.finish();
  return std::move(sink.bytes());
}

void write_sample_gguf(uint64_t seed, const std::string& path) {
  GgufWriter w;
  const auto data = build_sample(seed, w);
  FileSink sink(path);
  w.begin(sink);
  for (const auto& d : data) w.write_data(d.data(), d.size());
  w.finish();
  sink.close();
}

}  // namespace polyinfer::testing
