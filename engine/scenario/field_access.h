// How a row of the field table reads and writes its Scenario member: the getter and setter are generated from
// the member's path (&Scenario::training, &TrainingSettings::batch) and its C++ type, so a row never spells them
// out. Private to scenario_fields.cpp.
#pragma once
#include <type_traits>

#include "scenario/scenario_fields.h"

namespace shardscope::field_access {

template <auto... Path>
auto& member(Scenario& s) {
  return (s .* ... .* Path);
}
template <auto... Path>
const auto& member(const Scenario& s) {
  return (s .* ... .* Path);
}

// FieldValue <-> a member's C++ type. Enums travel as their names (set_field has checked them against choices).
template <class T>
struct Codec;
template <>
struct Codec<int> {
  static FieldValue to(int v) { return std::int64_t{v}; }
  static int from(const FieldValue& v) { return static_cast<int>(std::get<std::int64_t>(v)); }
};
template <>
struct Codec<double> {
  static FieldValue to(double v) { return v; }
  static double from(const FieldValue& v) { return std::get<double>(v); }
};
template <>
struct Codec<bool> {
  static FieldValue to(bool v) { return v; }
  static bool from(const FieldValue& v) { return std::get<bool>(v); }
};
template <>
struct Codec<std::string> {
  static FieldValue to(const std::string& v) { return v; }
  static std::string from(const FieldValue& v) { return std::get<std::string>(v); }
};
template <class T>
struct Codec<std::optional<T>> {
  static FieldValue to(const std::optional<T>& v) { return v ? Codec<T>::to(*v) : FieldValue{}; }
  static std::optional<T> from(const FieldValue& v) {
    if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
    return Codec<T>::from(v);
  }
};
// An enum named by name_of and read back by parse_of.
template <class E, auto name_of, auto parse_of>
struct EnumCodec {
  static FieldValue to(E v) { return std::string(name_of(v)); }
  static E from(const FieldValue& v) { return *parse_of(std::get<std::string>(v)); }
};
template <>
struct Codec<LossKind> : EnumCodec<LossKind, loss_name, parse_loss> {};
template <>
struct Codec<OptimizerKind> : EnumCodec<OptimizerKind, optimizer_name, parse_optimizer> {};
template <>
struct Codec<CheckpointMode> : EnumCodec<CheckpointMode, checkpoint_name, parse_checkpoint> {};
template <>
struct Codec<StrategyKind> : EnumCodec<StrategyKind, strategy_name, parse_strategy> {};
template <>
struct Codec<AccountingMode> : EnumCodec<AccountingMode, accounting_name, parse_accounting> {};
template <>
struct Codec<Dtype> : EnumCodec<Dtype, dtype_name, parse_dtype> {};
template <>
struct Codec<Zero2Reduce> : EnumCodec<Zero2Reduce, zero2_reduce_name, parse_zero2_reduce> {};
template <>
struct Codec<Zero3Init> : EnumCodec<Zero3Init, zero3_init_name, parse_zero3_init> {};
template <>
struct Codec<FsdpUnits> : EnumCodec<FsdpUnits, fsdp_units_name, parse_fsdp_units> {};
template <>
struct Codec<ProcessGroupBackend> : EnumCodec<ProcessGroupBackend, process_group_name, parse_process_group> {};
template <>
struct Codec<TransformerImplementation> : EnumCodec<TransformerImplementation, implementation_name, parse_implementation> {};
template <>
struct Codec<AttentionKind> : EnumCodec<AttentionKind, attention_name, parse_attention> {};
template <>
struct Codec<Precision> : EnumCodec<Precision, precision_name, parse_precision> {};

// A count where 0 means "derive it" (cluster.world): unset <-> 0.
struct ZeroIsUnset {
  static FieldValue to(int v) { return v == 0 ? FieldValue{} : Codec<int>::to(v); }
  static int from(const FieldValue& v) { return std::holds_alternative<std::monostate>(v) ? 0 : Codec<int>::from(v); }
};

// Text where "" means "the default" (accounting.gpu_arch): unset <-> "".
struct EmptyIsUnset {
  static FieldValue to(const std::string& v) { return v.empty() ? FieldValue{} : FieldValue{v}; }
  static std::string from(const FieldValue& v) {
    return std::holds_alternative<std::monostate>(v) ? std::string() : std::get<std::string>(v);
  }
};

template <class C, auto... Path>
FieldValue get(const Scenario& s) {
  return C::to(member<Path...>(s));
}
template <class C, auto... Path>
void put(Scenario& s, const FieldValue& v) {
  member<Path...>(s) = C::from(v);
}

template <auto... Path>
using MemberType = std::remove_cvref_t<decltype(member<Path...>(std::declval<Scenario&>()))>;

// Fills a row's get / put for the member at Path, with the codec of its type (or C when given).
template <auto... Path>
ScenarioField with_member(ScenarioField row) {
  using C = Codec<MemberType<Path...>>;
  row.get = &get<C, Path...>;
  row.put = &put<C, Path...>;
  return row;
}
template <auto... Path>
ScenarioField with_zero_unset_member(ScenarioField row) {
  row.get = &get<ZeroIsUnset, Path...>;
  row.put = &put<ZeroIsUnset, Path...>;
  row.zero_means_unset = true;
  return row;
}
template <auto... Path>
ScenarioField with_empty_unset_member(ScenarioField row) {
  row.get = &get<EmptyIsUnset, Path...>;
  row.put = &put<EmptyIsUnset, Path...>;
  return row;
}

}  // namespace shardscope::field_access
