//===- Tensor.h - harp's typed C++ Tensor API -------------------*- C++ -*-===//
//
// harp::Tensor<T, D>: a cheap handle to a node of a lazy graph of harp ops.
// T is the element type (float, double, std::complex<float>,
// std::complex<double>, int8_t..int64_t, uint8_t..uint64_t, bool) and D the
// rank, static (Dim<N>) or dynamic (DimDyn). Ops only build the graph;
// realize()/data() compile it with harp's JIT (cached by graph shape) and run
// it. backward() asks harp-autodiff for the gradients.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_TENSOR_H
#define HARP_API_TENSOR_H

#include "harp/API/Graph.h"
#include "harp/API/Random.h"

#include <array>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace harp {

//===----------------------------------------------------------------------===//
// Ranks and dtype traits
//===----------------------------------------------------------------------===//

template <int N>
struct Dim {
  static_assert(N >= 0 && N <= 6, "harp tensors have rank 0 to 6");
  static constexpr int rank = N;
};
struct DimDyn {
  static constexpr int rank = -1;
};

template <typename D, int Delta>
struct ShiftRank {
  using type = Dim<D::rank + Delta>;
};
template <int Delta>
struct ShiftRank<DimDyn, Delta> {
  using type = DimDyn;
};
/// D with `Delta` more dims (DimDyn stays DimDyn).
template <typename D, int Delta>
using ShiftRankT = typename ShiftRank<D, Delta>::type;

template <typename T>
struct DTypeTraits;
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  template <>                                                                  \
  struct DTypeTraits<CType> {                                                  \
    static constexpr DType value = DType::Enum;                                \
  };
#include "harp/API/DTypes.def"

template <DType D>
struct CTypeOf;
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  template <>                                                                  \
  struct CTypeOf<DType::Enum> {                                                \
    using type = CType;                                                        \
  };
#include "harp/API/DTypes.def"

/// The element type of `A op B` under PyTorch's promotion.
template <typename A, typename B>
using PromoteT = typename CTypeOf<promote(DTypeTraits<A>::value,
                                          DTypeTraits<B>::value)>::type;

/// The rank of a broadcast of D1 and D2.
template <typename D1, typename D2>
using BroadcastDimT =
    std::conditional_t<(D1::rank < 0 || D2::rank < 0), DimDyn,
                       Dim<(D1::rank > D2::rank ? D1::rank : D2::rank)>>;

/// The seed's dtype hierarchy: numeric > (float | integer > signed/unsigned).
template <typename T>
inline constexpr bool IsNumeric = !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool IsFloat = std::is_floating_point_v<T>;
template <typename T>
inline constexpr bool IsInteger = std::is_integral_v<T> &&IsNumeric<T>;
template <typename T>
inline constexpr bool IsSigned = IsInteger<T> &&std::is_signed_v<T>;
template <typename T>
inline constexpr bool IsUnsigned = IsInteger<T> &&std::is_unsigned_v<T>;
template <typename T>
struct RealPart {
  using type = T;
  static constexpr bool complex = false;
};
template <typename T>
struct RealPart<std::complex<T>> {
  using type = T;
  static constexpr bool complex = true;
};
/// std::complex<float> and std::complex<double>.
template <typename T>
inline constexpr bool IsComplex = RealPart<T>::complex;
/// Floats and complex numbers: the types of true division, exp, gradients.
template <typename T>
inline constexpr bool IsInexact = IsFloat<T> || IsComplex<T>;
/// The type of a complex number's parts (T itself for real types).
template <typename T>
using RealT = typename RealPart<T>::type;

/// An operand that remembers where the expression using it was written: the
/// binary operators take their right operand as At<...>, whose implicit
/// construction records the caller's file and line (operators cannot take a
/// defaulted location argument of their own).
template <typename V>
struct At {
  At(const V &value, SourceLocation loc = SourceLocation::current())
      : value(value), loc(loc) {}
  operator const V &() const { return value; }
  V value;
  SourceLocation loc;
};

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

template <typename T, typename D = DimDyn>
class Tensor {
  static constexpr DType dtype = DTypeTraits<T>::value;
  template <typename U, typename E>
  friend class Tensor;

public:
  using Shape = std::vector<int64_t>;

  /// Wraps a graph node; its dtype and (for static D) rank are checked.
  explicit Tensor(detail::NodePtr node) : node(std::move(node)) {
    if (detail::dtypeOf(this->node) != dtype)
      throw Error("Tensor<" + dtypeName(dtype) + ">: node holds " +
                  dtypeName(detail::dtypeOf(this->node)));
    if (D::rank >= 0 &&
        detail::shapeOf(this->node).size() != static_cast<size_t>(D::rank))
      throw Error("Tensor of rank " + std::to_string(D::rank) +
                  ": the value has rank " +
                  std::to_string(detail::shapeOf(this->node).size()));
  }

  /// A tensor of static rank seen as one of dynamic rank (the same node).
  template <typename E, typename DD = D,
            typename = std::enable_if_t<std::is_same_v<DD, DimDyn> &&
                                        !std::is_same_v<E, DimDyn>>>
  Tensor(const Tensor<T, E> &o) : node(o.node) {}

  // Construction.
  /// A tensor holding `values` on `backend` (backend::get("cpu") unless
  /// given).
  static Tensor from_data(const std::vector<T> &values, Shape shape,
                          BackendPtr backend = backend::get("cpu"),
                          SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    if (static_cast<int64_t>(values.size()) != n)
      throw Error("from_data: " + std::to_string(values.size()) +
                  " values for shape of " + std::to_string(n) + " elements");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(values.begin(), values.end());
      return Tensor(
          detail::fromData(dtype, shape, bytes.data(), std::move(backend)));
    } else {
      return Tensor(
          detail::fromData(dtype, shape, values.data(), std::move(backend)));
    }
  }
  /// A named placeholder: values come later with set_data(), and graphs
  /// reading it are recomputed when they change.
  static Tensor input(std::string name, Shape shape,
                      SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    return Tensor(detail::input(dtype, std::move(shape), std::move(name)));
  }
  /// New values for a leaf (from_data or input) of the same shape.
  Tensor &set_data(const std::vector<T> &values) {
    if (static_cast<int64_t>(values.size()) != numel())
      throw Error("set_data: " + std::to_string(values.size()) +
                  " values for a tensor of " + std::to_string(numel()) +
                  " elements");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(values.begin(), values.end());
      detail::setData(node, bytes.data());
    } else {
      detail::setData(node, values.data());
    }
    return *this;
  }
  static Tensor full(Shape shape, T value,
                     SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    if constexpr (IsComplex<T>)
      return Tensor(detail::fullComplex(dtype, std::move(shape), value.real(),
                                        value.imag()));
    else
      return Tensor(detail::full(dtype, std::move(shape), double(value)));
  }
  static Tensor zeros(Shape shape,
                      SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    return full(std::move(shape), T(0));
  }
  static Tensor ones(Shape shape,
                     SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    return full(std::move(shape), T(1));
  }
  /// Uniform [0, 1) numbers of a fixed seed: the same seed gives the same
  /// numbers, on every machine.
  static Tensor rand(Shape shape, uint64_t seed,
                     SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "rand needs a float tensor");
    return Tensor(detail::rand(dtype, std::move(shape), seed));
  }
  /// Uniform [0, 1) numbers, fresh on every call: the seed is the next of
  /// `generator`'s stream, a run-time argument (nothing compiles anew).
  static Tensor rand(Shape shape, Generator &generator,
                     SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "rand needs a float tensor");
    return Tensor(detail::rand(dtype, std::move(shape),
                               detail::seedLeaf(generator.next_seed())));
  }
  static Tensor rand(Shape shape,
                     SourceLocation loc = SourceLocation::current()) {
    return rand(std::move(shape), default_generator(), loc);
  }
  static Tensor arange(int64_t count, T start = T(0), T step = T(1),
                       SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    static_assert(IsNumeric<T> && !IsComplex<T>,
                  "arange needs a real numeric tensor");
    return Tensor(detail::arange(dtype, count, double(start), double(step)));
  }

  /// Copies share the node; fork() is that copy, for the seed's API.
  Tensor fork() const { return *this; }

  const Shape &shape() const { return detail::shapeOf(node); }
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape())
      n *= s;
    return n;
  }
  const detail::NodePtr &graphNode() const { return node; }

  // Arithmetic (NumPy broadcasting; same element type; scalars allowed).
  Tensor operator+(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bin(BinaryOp::Add, o);
  }
  Tensor operator-(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bin(BinaryOp::Sub, o);
  }
  Tensor operator*(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bin(BinaryOp::Mul, o);
  }
  Tensor operator/(At<Tensor> o) const {
    LocationScope scope(o.loc);
    static_assert(IsInexact<T>,
                  "/ needs float or complex tensors; use idiv for integers");
    return bin(BinaryOp::Div, o);
  }
  Tensor operator+(At<T> s) const {
    LocationScope scope(s.loc);
    return *this + scalar(s);
  }
  Tensor operator-(At<T> s) const {
    LocationScope scope(s.loc);
    return *this - scalar(s);
  }
  Tensor operator*(At<T> s) const {
    LocationScope scope(s.loc);
    return *this * scalar(s);
  }
  Tensor operator/(At<T> s) const {
    LocationScope scope(s.loc);
    return *this / scalar(s);
  }
  Tensor operator-() const { return un(UnaryOp::Neg); }
  Tensor idiv(const Tensor &o,
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsInteger<T>, "idiv needs integer tensors");
    return bin(BinaryOp::FloorDiv, o);
  }
  Tensor rem(const Tensor &o,
             SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return bin(BinaryOp::Rem, o);
  }
  Tensor pow(const Tensor &o,
             SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsInexact<T>, "pow needs float or complex tensors");
    return bin(BinaryOp::Pow, o);
  }
  Tensor maximum(const Tensor &o,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return bin(BinaryOp::Maximum, o);
  }
  Tensor minimum(const Tensor &o,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return bin(BinaryOp::Minimum, o);
  }

  // Bitwise (integers and bool).
  Tensor operator&(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bits(BinaryOp::BitAnd, o);
  }
  Tensor operator|(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bits(BinaryOp::BitOr, o);
  }
  Tensor operator^(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bits(BinaryOp::BitXor, o);
  }
  Tensor operator~() const {
    static_assert(!IsFloat<T>, "~ needs integer or bool tensors");
    return un(UnaryOp::Not);
  }
  Tensor operator<<(At<Tensor> o) const {
    LocationScope scope(o.loc);
    static_assert(IsInteger<T>, "<< needs integer tensors");
    return bin(BinaryOp::Shl, o);
  }
  Tensor operator>>(At<Tensor> o) const {
    LocationScope scope(o.loc);
    static_assert(IsInteger<T>, ">> needs integer tensors");
    return bin(BinaryOp::Shr, o);
  }

  // Comparisons.
  Tensor<bool, D> operator<(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return cmp(BinaryOp::Lt, o);
  }
  Tensor<bool, D> operator<=(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return cmp(BinaryOp::Le, o);
  }
  Tensor<bool, D> operator>(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return cmp(BinaryOp::Gt, o);
  }
  Tensor<bool, D> operator>=(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return cmp(BinaryOp::Ge, o);
  }
  Tensor<bool, D> eq(const Tensor &o,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return cmp(BinaryOp::Eq, o);
  }
  Tensor<bool, D> ne(const Tensor &o,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return cmp(BinaryOp::Ne, o);
  }

  // Unary.
  Tensor exp(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Exp);
  }
  Tensor ln(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Log);
  }
  Tensor log2(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Log2);
  }
  Tensor exp2(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Exp2);
  }
  Tensor sqrt(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Sqrt);
  }
  Tensor sin(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Sin);
  }
  Tensor cos(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Cos);
  }
  Tensor tanh(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Tanh);
  }
  Tensor sigmoid(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Sigmoid);
  }
  Tensor recip(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Recip);
  }
  Tensor floor(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Floor);
  }
  Tensor erf(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Erf);
  }
  Tensor erfc(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Erfc);
  }
  Tensor log1p(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Log1p);
  }
  Tensor expm1(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Expm1);
  }
  Tensor rsqrt(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Rsqrt);
  }
  Tensor tan(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Tan);
  }
  Tensor atan(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Atan);
  }
  Tensor ceil(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Ceil);
  }
  Tensor round(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Round);
  }
  Tensor trunc(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return fl(UnaryOp::Trunc);
  }
  /// 1, -1 or 0 by sign (NaN stays NaN); a zero gradient.
  Tensor sign(SourceLocation loc = SourceLocation::current()) const {
    static_assert(IsNumeric<T>, "sign needs a numeric tensor");
    LocationScope scope(loc);
    return un(UnaryOp::Sign);
  }
  Tensor square(SourceLocation loc = SourceLocation::current()) const {
    static_assert(IsNumeric<T>, "square needs a numeric tensor");
    LocationScope scope(loc);
    return un(UnaryOp::Square);
  }
  Tensor<bool, D> isnan(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<bool, D>(detail::unary(UnaryOp::IsNan, node), nullptr);
  }
  Tensor<bool, D> isinf(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<bool, D>(detail::unary(UnaryOp::IsInf, node), nullptr);
  }
  /// Python's %: the remainder with the divisor's sign (rem is C's).
  Tensor remainder(At<Tensor> o) const {
    LocationScope scope(o.loc);
    return bin(BinaryOp::Mod, o);
  }
  /// Values limited to [min, max] (either may be absent); the gradient is
  /// 1 inside and at the bounds.
  Tensor clamp(std::optional<T> min, std::optional<T> max,
               SourceLocation loc = SourceLocation::current()) const {
    static_assert(IsNumeric<T> && !IsComplex<T>,
                  "clamp needs a real numeric tensor");
    LocationScope scope(loc);
    return Tensor(detail::clamp(
        node, min ? std::optional<double>(double(*min)) : std::nullopt,
        max ? std::optional<double>(double(*max)) : std::nullopt));
  }
  Tensor relu(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsNumeric<T>, "relu needs a numeric tensor");
    return un(UnaryOp::Relu);
  }
  /// |x|; the modulus of a complex number (a real tensor).
  Tensor<RealT<T>, D>
  abs(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsNumeric<T>, "abs needs a numeric tensor");
    return part(UnaryOp::Abs);
  }
  /// The real part (x itself for a real tensor).
  Tensor<RealT<T>, D>
  real(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return part(UnaryOp::Real);
  }
  /// The imaginary part.
  Tensor<RealT<T>, D>
  imag(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsComplex<T>, "imag needs a complex tensor");
    return part(UnaryOp::Imag);
  }
  /// The complex conjugate (x itself for a real tensor).
  Tensor conj(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::unary(UnaryOp::Conj, node));
  }
  /// The argument atan2(im, re) of a complex number; pi for a negative
  /// real, else 0.
  Tensor<RealT<T>, D>
  angle(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsInexact<T>, "angle needs a float or complex tensor");
    return part(UnaryOp::Angle);
  }
  template <typename U>
  Tensor<U, D> cast(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<U, D>(detail::cast(node, DTypeTraits<U>::value));
  }

  // Reductions: over one axis (rank - 1, or kept with keepdim) or all.
  Tensor<T, ShiftRankT<D, -1>>
  sum(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return red1(ReduceOp::Sum, axis);
  }
  Tensor<T, ShiftRankT<D, -1>>
  prod(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return red1(ReduceOp::Prod, axis);
  }
  Tensor<T, ShiftRankT<D, -1>>
  max(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return red1(ReduceOp::Max, axis);
  }
  Tensor<T, ShiftRankT<D, -1>>
  min(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return red1(ReduceOp::Min, axis);
  }
  Tensor<T, ShiftRankT<D, -1>>
  mean(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return red1(ReduceOp::Mean, axis);
  }
  Tensor sum_keepdim(int64_t axis,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redKeep(ReduceOp::Sum, axis);
  }
  Tensor prod_keepdim(int64_t axis,
                      SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redKeep(ReduceOp::Prod, axis);
  }
  Tensor min_keepdim(int64_t axis,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redKeep(ReduceOp::Min, axis);
  }
  Tensor max_keepdim(int64_t axis,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redKeep(ReduceOp::Max, axis);
  }
  Tensor mean_keepdim(int64_t axis,
                      SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redKeep(ReduceOp::Mean, axis);
  }
  /// Over several axes: the rank is only known at run time.
  Tensor<T, DimDyn> sum(Shape axes, bool keepdim,
                        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAxes(ReduceOp::Sum, std::move(axes), keepdim);
  }
  Tensor<T, DimDyn> max(Shape axes, bool keepdim,
                        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAxes(ReduceOp::Max, std::move(axes), keepdim);
  }
  Tensor<T, DimDyn> prod(Shape axes, bool keepdim,
                         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAxes(ReduceOp::Prod, std::move(axes), keepdim);
  }
  Tensor<T, DimDyn> min(Shape axes, bool keepdim,
                        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAxes(ReduceOp::Min, std::move(axes), keepdim);
  }
  Tensor<T, DimDyn> mean(Shape axes, bool keepdim,
                         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAxes(ReduceOp::Mean, std::move(axes), keepdim);
  }
  Tensor<T, Dim<0>> sum(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAll(ReduceOp::Sum);
  }
  Tensor<T, Dim<0>> prod(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAll(ReduceOp::Prod);
  }
  Tensor<T, Dim<0>> max(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAll(ReduceOp::Max);
  }
  Tensor<T, Dim<0>> min(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAll(ReduceOp::Min);
  }
  Tensor<T, Dim<0>> mean(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return redAll(ReduceOp::Mean);
  }
  Tensor softmax(int64_t axis,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "softmax needs a float tensor");
    return Tensor(detail::softmax(node, axis));
  }
  /// x - logsumexp(x) along `axis`.
  Tensor log_softmax(int64_t axis,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "log_softmax needs a float tensor");
    return Tensor(detail::logSoftmax(node, axis));
  }
  /// log(sum(exp(x))) over `axes` (empty: all), computed around the
  /// maximum.
  Tensor<T, DimDyn>
  logsumexp(Shape axes, bool keepdim = false,
            SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "logsumexp needs a float tensor");
    return Tensor<T, DimDyn>(detail::logsumexp(node, std::move(axes), keepdim));
  }
  /// The variance over `axes` (empty: all), divided by n - correction
  /// (1: unbiased, torch's default).
  Tensor<T, DimDyn> var(Shape axes, int64_t correction = 1,
                        bool keepdim = false,
                        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "var needs a float tensor");
    return Tensor<T, DimDyn>(
        detail::var(node, std::move(axes), correction, keepdim));
  }
  /// The index of the first maximum along `axis` (NaN counts as the
  /// maximum).
  Tensor<int64_t, DimDyn>
  argmax(int64_t axis, bool keepdim = false,
         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<int64_t, DimDyn>(
        detail::argExtreme(node, axis, keepdim, /*max=*/true));
  }
  /// The index of the first minimum along `axis`.
  Tensor<int64_t, DimDyn>
  argmin(int64_t axis, bool keepdim = false,
         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<int64_t, DimDyn>(
        detail::argExtreme(node, axis, keepdim, /*max=*/false));
  }
  /// Matrix product of the last two dims, batch dims broadcast.
  template <typename D2>
  Tensor matmul(const Tensor<T, D2> &o,
                SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::matmul(node, o.node));
  }

  // Views.
  template <size_t M>
  Tensor<T, Dim<M>>
  reshape(std::array<int64_t, M> s,
          SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, Dim<M>>(detail::reshape(node, Shape(s.begin(), s.end())));
  }
  Tensor<T, DimDyn>
  reshape(Shape s, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(detail::reshape(node, std::move(s)));
  }
  Tensor permute(Shape perm,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::permute(node, std::move(perm)));
  }
  Tensor transpose(int64_t a, int64_t b,
                   SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    Shape perm;
    int64_t r = rank();
    a = a < 0 ? a + r : a;
    b = b < 0 ? b + r : b;
    for (int64_t i = 0; i < r; ++i)
      perm.push_back(i == a ? b : i == b ? a : i);
    if (a < 0 || a >= r || b < 0 || b >= r)
      throw Error("transpose: dims out of range for rank " + std::to_string(r));
    return permute(perm);
  }
  Tensor expand(Shape s, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::expand(node, std::move(s)));
  }
  Tensor<T, ShiftRankT<D, -1>>
  squeeze(int64_t axis, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    Shape s = shape();
    int64_t r = rank();
    if (axis < -r || axis >= r)
      throw Error("squeeze: axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(r));
    axis = axis < 0 ? axis + r : axis;
    if (s[axis] != 1)
      throw Error("squeeze: dim " + std::to_string(axis) + " has size " +
                  std::to_string(s[axis]) + ", not 1");
    s.erase(s.begin() + axis);
    return Tensor<T, ShiftRankT<D, -1>>(detail::reshape(node, s));
  }
  Tensor<T, ShiftRankT<D, 1>>
  unsqueeze(int64_t axis,
            SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    Shape s = shape();
    int64_t r = rank() + 1;
    if (axis < -r || axis >= r)
      throw Error("unsqueeze: axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(r));
    axis = axis < 0 ? axis + r : axis;
    s.insert(s.begin() + axis, 1);
    return Tensor<T, ShiftRankT<D, 1>>(detail::reshape(node, s));
  }
  Tensor<T, Dim<1>>
  flatten(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, Dim<1>>(detail::reshape(node, {numel()}));
  }
  Tensor slice(int64_t dim, int64_t start, int64_t stop, int64_t step = 1,
               SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::slice(node, dim, start, stop, step));
  }
  Tensor flip(Shape dims,
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::flip(node, std::move(dims)));
  }
  Tensor pad(Shape before, Shape after, T value = T(0),
             SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(
        detail::pad(node, std::move(before), std::move(after), double(value)));
  }
  Tensor contiguous(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::contiguous(node));
  }
  /// Windows over the trailing K dims: K more dims (K = kernel size).
  template <size_t K>
  Tensor<T, ShiftRankT<D, int(K)>>
  unfold(std::array<int64_t, K> kernel, std::array<int64_t, K> stride,
         std::array<int64_t, K> dilation,
         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, ShiftRankT<D, int(K)>>(
        detail::unfold(node, Shape(kernel.begin(), kernel.end()),
                       Shape(stride.begin(), stride.end()),
                       Shape(dilation.begin(), dilation.end())));
  }
  /// Sums windows [lead..., out..., kernel...] back into an image of
  /// `size` (the adjoint of unfold): K fewer dims.
  template <size_t K>
  Tensor<T, ShiftRankT<D, -int(K)>>
  fold(std::array<int64_t, K> size, std::array<int64_t, K> stride,
       std::array<int64_t, K> dilation,
       SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, ShiftRankT<D, -int(K)>>(
        detail::fold(node, Shape(size.begin(), size.end()),
                     Shape(stride.begin(), stride.end()),
                     Shape(dilation.begin(), dilation.end())));
  }
  /// Nearest-neighbour resize of the trailing dims (PyTorch's "nearest").
  Tensor
  interpolate_nearest(Shape size,
                      SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::interpolateNearest(node, std::move(size)));
  }
  /// Linear/bilinear/trilinear resize of the trailing dims (PyTorch's
  /// interpolate, align_corners=False).
  Tensor
  interpolate_linear(Shape size,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "linear interpolation needs a float tensor");
    return Tensor(detail::interpolateLinear(node, std::move(size)));
  }
  /// Convolution of [N, C, spatial...] with weight [F, C, kernel...].
  Tensor conv(const Tensor &weight, Shape stride, Shape padding, Shape dilation,
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "conv needs float tensors");
    return Tensor(detail::conv(node, weight.node, std::move(stride),
                               std::move(padding), std::move(dilation)));
  }
  /// torch.gather along `dim`.
  template <typename I>
  Tensor gather(int64_t dim, const Tensor<I, D> &index,
                SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>,
                  "indices are int32_t or int64_t");
    return Tensor(detail::gather(node, index.graphNode(), dim));
  }
  /// Tensor.scatter_add (value semantics: a new tensor).
  template <typename I>
  Tensor scatter_add(int64_t dim, const Tensor<I, D> &index, const Tensor &src,
                     SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>,
                  "indices are int32_t or int64_t");
    return Tensor(detail::scatterAdd(node, index.graphNode(), src.node, dim));
  }

  // Composites with PyTorch's names (harp/API/Graph.h says how each is
  // built).
  /// The entries at the 1-D `index` along `dim`.
  template <typename I, typename DI>
  Tensor index_select(int64_t dim, const Tensor<I, DI> &index,
                      SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::indexSelect(node, dim, index.graphNode()));
  }
  /// gather() with the other dims broadcast between this tensor and
  /// `indices` (no dim: both flattened).
  template <typename I, typename DI>
  Tensor<T, DimDyn>
  take_along_dim(const Tensor<I, DI> &indices,
                 std::optional<int64_t> dim = std::nullopt,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(
        detail::takeAlongDim(node, indices.graphNode(), dim));
  }
  /// Pieces of `size` along `dim` (the last one shorter), as views.
  std::vector<Tensor>
  split(int64_t size, int64_t dim = 0,
        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return wrap<Tensor>(detail::split(node, size, dim));
  }
  /// Pieces of the listed sizes along `dim`, which must add up to it.
  std::vector<Tensor>
  split(Shape sections, int64_t dim = 0,
        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return wrap<Tensor>(detail::splitSections(node, std::move(sections), dim));
  }
  /// split() into `chunks` pieces of ceil(n / chunks).
  std::vector<Tensor>
  chunk(int64_t chunks, int64_t dim = 0,
        SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return wrap<Tensor>(detail::chunk(node, chunks, dim));
  }
  /// The slices along `dim`, that dim removed.
  std::vector<Tensor<T, ShiftRankT<D, -1>>>
  unbind(int64_t dim = 0,
         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return wrap<Tensor<T, ShiftRankT<D, -1>>>(detail::unbind(node, dim));
  }
  /// Tiled sizes[i] times along dim i (extra leading sizes add dims).
  Tensor<T, DimDyn>
  repeat(Shape sizes, SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(detail::repeat(node, std::move(sizes)));
  }
  /// Each element `repeats` times along `dim` (no dim: flattened first).
  Tensor<T, DimDyn>
  repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                    SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(detail::repeatInterleave(node, repeats, dim));
  }
  /// Element i repeats[i] times along `dim` (no dim: flattened first).
  Tensor<T, DimDyn>
  repeat_interleave(Shape repeats, std::optional<int64_t> dim = std::nullopt,
                    SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(
        detail::repeatInterleave(node, std::move(repeats), dim));
  }
  /// The lower triangle of the last two dims (j <= i + diagonal).
  Tensor tril(int64_t diagonal = 0,
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::triangle(node, diagonal, /*lower=*/true));
  }
  /// The upper triangle of the last two dims (j >= i + diagonal).
  Tensor triu(int64_t diagonal = 0,
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::triangle(node, diagonal, /*lower=*/false));
  }
  /// Shifted cyclically by shifts[i] along dims[i] (dims empty: one shift
  /// of the flattened tensor).
  Tensor roll(Shape shifts, Shape dims = {},
              SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::roll(node, std::move(shifts), std::move(dims)));
  }
  /// Broadcast to `shape` (NumPy's rules; -1 keeps a dim).
  Tensor<T, DimDyn>
  broadcast_to(Shape shape,
               SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor<T, DimDyn>(
        detail::expand(node, std::move(shape), "broadcast_to"));
  }
  /// Running sums along `dim` (a parallel scan).
  Tensor cumsum(int64_t dim,
                SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::scan(ReduceOp::Sum, node, dim));
  }
  /// Running products along `dim` (a parallel scan).
  Tensor cumprod(int64_t dim,
                 SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::scan(ReduceOp::Prod, node, dim));
  }
  /// The vector p-norm over `dims` (empty: all): p = 2, 1, +-inf, 0 or any
  /// positive number; a zero norm has a zero gradient.
  Tensor<T, DimDyn> norm(double p = 2, Shape dims = {}, bool keepdim = false,
                         SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "norm needs a float tensor");
    return Tensor<T, DimDyn>(detail::norm(node, p, std::move(dims), keepdim));
  }
  /// Standard normal numbers (Box-Muller on rand's generator).
  static Tensor randn(Shape shape, uint64_t seed,
                      SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "randn needs a float tensor");
    return Tensor(detail::randn(dtype, std::move(shape), seed));
  }
  /// Standard normal numbers, fresh on every call (as rand(shape, generator)).
  static Tensor randn(Shape shape, Generator &generator,
                      SourceLocation loc = SourceLocation::current()) {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "randn needs a float tensor");
    return Tensor(detail::randn(dtype, std::move(shape),
                                detail::seedLeaf(generator.next_seed())));
  }
  static Tensor randn(Shape shape,
                      SourceLocation loc = SourceLocation::current()) {
    return randn(std::move(shape), default_generator(), loc);
  }
  /// zeros / ones / full of this tensor's shape and type.
  Tensor zeros_like(SourceLocation loc = SourceLocation::current()) const {
    return full(shape(), T(0), loc);
  }
  Tensor ones_like(SourceLocation loc = SourceLocation::current()) const {
    return full(shape(), T(1), loc);
  }
  Tensor full_like(T value,
                   SourceLocation loc = SourceLocation::current()) const {
    return full(shape(), value, loc);
  }

  // Devices.
  /// Where the tensor is computed.
  BackendPtr backend() const { return detail::backendOf(node); }
  /// The value on `to` (this tensor if it is there already): computed
  /// where it is, then moved; like detach(), cut from the graph.
  Tensor to(const BackendPtr &to,
            SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::to(node, to));
  }

  // Execution.
  /// Computes the value (once; later calls return at once).
  const Tensor &realize(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    detail::realize(node);
    return *this;
  }
  /// realize() with `options` over set_options for this call.
  const Tensor &realize(const CompileOptions &options) const {
    detail::realize(node, options);
    return *this;
  }
  std::vector<T> data(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    const Array &a = detail::realize(node);
    std::vector<T> out(a.numElements());
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < a.numElements(); ++i)
        out[i] = a.as<uint8_t>()[i] != 0;
    } else {
      std::copy(a.as<T>(), a.as<T>() + a.numElements(), out.begin());
    }
    return out;
  }
  T item(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    if (numel() != 1)
      throw Error("item: tensor of shape has " + std::to_string(numel()) +
                  " elements, not 1");
    return data().front();
  }
  /// The harp IR that realize() compiles.
  std::string mlir() const { return detail::moduleText(node); }

  // Autograd.
  Tensor &set_requires_grad(bool value = true) {
    static_assert(IsInexact<T>, "gradients need a float or complex tensor");
    detail::setRequiresGrad(node, value);
    return *this;
  }
  bool requires_grad() const { return detail::requiresGrad(node); }
  void backward(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "backward needs a float loss");
    detail::backward(node);
  }
  /// backward() with `options` over set_options for this call.
  void backward(const CompileOptions &options) const {
    static_assert(IsFloat<T>, "backward needs a float loss");
    detail::backward(node, options);
  }
  /// backward() into the gradients of `inputs` only (leaves that require
  /// a gradient; harp::graphNodes(w, b)), torch's backward(inputs=...).
  void backward(const std::vector<detail::NodePtr> &inputs,
                const CompileOptions &options = {},
                SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    static_assert(IsFloat<T>, "backward needs a float loss");
    detail::backward(node, options, &inputs);
  }
  /// The accumulated gradient itself (its storage shared, as torch's
  /// .grad; detail::grad); throws if backward() has not reached it.
  Tensor grad(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    detail::NodePtr g = detail::grad(node);
    if (!g)
      throw Error("grad: no gradient has been accumulated for this tensor");
    return Tensor(g);
  }
  void zero_grad() const { detail::zeroGrad(node); }
  Tensor detach(SourceLocation loc = SourceLocation::current()) const {
    LocationScope scope(loc);
    return Tensor(detail::detach(node));
  }

private:
  template <typename R>
  static std::vector<R> wrap(const std::vector<detail::NodePtr> &nodes) {
    return std::vector<R>(nodes.begin(), nodes.end());
  }
  /// A number as a 0-d argument of the compiled code: a new value reuses
  /// the kernel.
  Tensor scalar(T s) const {
    return Tensor(detail::scalar(dtype, &s), nullptr);
  }
  template <typename E>
  Tensor<T, E> as() const {
    return Tensor<T, E>(node, nullptr);
  }
  Tensor(detail::NodePtr node, std::nullptr_t) : node(std::move(node)) {}
  Tensor bin(BinaryOp op, const Tensor &o) const {
    return Tensor(detail::binary(op, node, o.node), nullptr);
  }
  Tensor bits(BinaryOp op, const Tensor &o) const {
    static_assert(!IsFloat<T>, "bitwise ops need integer or bool tensors");
    return bin(op, o);
  }
  Tensor<bool, D> cmp(BinaryOp op, const Tensor &o) const {
    return Tensor<bool, D>(detail::binary(op, node, o.node), nullptr);
  }
  Tensor un(UnaryOp op) const { return Tensor(detail::unary(op, node)); }
  Tensor fl(UnaryOp op) const {
    static_assert(IsInexact<T>, "this op needs a float or complex tensor");
    return un(op);
  }
  Tensor<RealT<T>, D> part(UnaryOp op) const {
    return Tensor<RealT<T>, D>(detail::unary(op, node), nullptr);
  }
  Tensor<T, ShiftRankT<D, -1>> red1(ReduceOp kind, int64_t axis) const {
    return Tensor<T, ShiftRankT<D, -1>>(
        detail::reduce(kind, node, {axis}, false));
  }
  Tensor redKeep(ReduceOp kind, int64_t axis) const {
    return Tensor(detail::reduce(kind, node, {axis}, true));
  }
  Tensor<T, Dim<0>> redAll(ReduceOp kind) const {
    return Tensor<T, Dim<0>>(detail::reduce(kind, node, {}, false));
  }
  Tensor<T, DimDyn> redAxes(ReduceOp kind, Shape axes, bool keepdim) const {
    return Tensor<T, DimDyn>(
        detail::reduce(kind, node, std::move(axes), keepdim));
  }

  detail::NodePtr node;
};

/// Mixed element types and ranks: NumPy broadcasting and PyTorch promotion
/// (the same-type, same-rank operators are Tensor's members).
#define HARP_MIXED_OP(OP, NAME)                                                \
  template <typename A, typename DA, typename B, typename DB,                  \
            typename = std::enable_if_t<!std::is_same_v<A, B> ||               \
                                        !std::is_same_v<DA, DB>>>              \
  Tensor<PromoteT<A, B>, BroadcastDimT<DA, DB>> operator OP(                   \
      const Tensor<A, DA> &a, const Tensor<B, DB> &b) {                        \
    return Tensor<PromoteT<A, B>, BroadcastDimT<DA, DB>>(                      \
        detail::binary(NAME, a.graphNode(), b.graphNode()));                   \
  }
HARP_MIXED_OP(+, BinaryOp::Add)
HARP_MIXED_OP(-, BinaryOp::Sub)
HARP_MIXED_OP(*, BinaryOp::Mul)
#undef HARP_MIXED_OP

/// Comparisons of mixed element types, after promotion.
#define HARP_MIXED_CMP(OP, NAME)                                               \
  template <typename A, typename DA, typename B, typename DB,                  \
            typename = std::enable_if_t<!std::is_same_v<A, B> ||               \
                                        !std::is_same_v<DA, DB>>>              \
  Tensor<bool, BroadcastDimT<DA, DB>> operator OP(const Tensor<A, DA> &a,      \
                                                  const Tensor<B, DB> &b) {    \
    return Tensor<bool, BroadcastDimT<DA, DB>>(                                \
        detail::binary(NAME, a.graphNode(), b.graphNode()));                   \
  }
HARP_MIXED_CMP(<, BinaryOp::Lt)
HARP_MIXED_CMP(<=, BinaryOp::Le)
HARP_MIXED_CMP(>, BinaryOp::Gt)
HARP_MIXED_CMP(>=, BinaryOp::Ge)
#undef HARP_MIXED_CMP

/// True division: integer operands give a float result (as PyTorch).
template <typename A, typename DA, typename B, typename DB,
          typename = std::enable_if_t<!std::is_same_v<A, B> ||
                                      !std::is_same_v<DA, DB>>>
auto operator/(const Tensor<A, DA> &a, const Tensor<B, DB> &b) {
  using P = PromoteT<A, B>;
  using R = std::conditional_t<IsInexact<P>, P, float>;
  return Tensor<R, BroadcastDimT<DA, DB>>(
      detail::binary(BinaryOp::Div, a.graphNode(), b.graphNode()));
}

/// The complex tensor re + im i (torch.complex; float parts of one type).
template <typename T, typename D>
Tensor<std::complex<T>, D>
complex(const Tensor<T, D> &re, const Tensor<T, D> &im,
        SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "complex needs float parts");
  LocationScope scope(loc);
  return Tensor<std::complex<T>, D>(
      detail::binary(BinaryOp::Complex, re.graphNode(), im.graphNode()));
}

/// abs (cos angle + i sin angle) (torch.polar).
template <typename T, typename D>
Tensor<std::complex<T>, D>
polar(const Tensor<T, D> &abs, const Tensor<T, D> &angle,
      SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "polar needs float tensors");
  LocationScope scope(loc);
  return complex(abs * angle.cos(), abs * angle.sin());
}

/// `a` where `condition` holds, else `b` (a select: torch.where).
template <typename T, typename D>
Tensor<T, D> where(const Tensor<bool, D> &condition, const Tensor<T, D> &a,
                   const Tensor<T, D> &b,
                   SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T, D>(
      detail::where(condition.graphNode(), a.graphNode(), b.graphNode()));
}

/// Activations with torch.nn.functional's names (float tensors).
namespace nn {
template <typename T, typename D>
Tensor<T, D> gelu(const Tensor<T, D> &x, bool tanh = false,
                  SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "gelu needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::gelu(x.graphNode(), tanh));
}
template <typename T, typename D>
Tensor<T, D> silu(const Tensor<T, D> &x,
                  SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "silu needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::silu(x.graphNode()));
}
template <typename T, typename D>
Tensor<T, D> elu(const Tensor<T, D> &x, double alpha = 1.0,
                 SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "elu needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::elu(x.graphNode(), alpha));
}
template <typename T, typename D>
Tensor<T, D> leaky_relu(const Tensor<T, D> &x, double negativeSlope = 0.01,
                        SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "leaky_relu needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::leakyRelu(x.graphNode(), negativeSlope));
}
template <typename T, typename D>
Tensor<T, D> softplus(const Tensor<T, D> &x, double beta = 1.0,
                      double threshold = 20.0,
                      SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "softplus needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::softplus(x.graphNode(), beta, threshold));
}
template <typename T, typename D>
Tensor<T, D> hardtanh(const Tensor<T, D> &x, T min = T(-1), T max = T(1),
                      SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return x.clamp(min, max);
}
} // namespace nn

namespace impl {
template <typename T, typename D>
std::vector<detail::NodePtr> nodesOf(const std::vector<Tensor<T, D>> &ts) {
  std::vector<detail::NodePtr> nodes;
  for (const auto &t : ts)
    nodes.push_back(t.graphNode());
  return nodes;
}
} // namespace impl

/// Concatenation along `dim`.
template <typename T, typename D>
Tensor<T, D> concat(const std::vector<Tensor<T, D>> &tensors, int64_t dim,
                    SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T, D>(detail::concat(impl::nodesOf(tensors), dim));
}

/// The tensors (all of one shape) joined along a new dim `dim`.
template <typename T, typename D>
Tensor<T, ShiftRankT<D, 1>>
stack(const std::vector<Tensor<T, D>> &tensors, int64_t dim = 0,
      SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T, ShiftRankT<D, 1>>(
      detail::stack(impl::nodesOf(tensors), dim));
}

/// The inner product of two 1-D tensors.
template <typename T, typename DA, typename DB>
Tensor<T, Dim<0>> dot(const Tensor<T, DA> &a, const Tensor<T, DB> &b,
                      SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T, Dim<0>>(detail::dot(a.graphNode(), b.graphNode()));
}

/// The outer product of two 1-D tensors: [n] x [m] -> [n, m].
template <typename T, typename DA, typename DB>
Tensor<T, Dim<2>> outer(const Tensor<T, DA> &a, const Tensor<T, DB> &b,
                        SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T, Dim<2>>(detail::outer(a.graphNode(), b.graphNode()));
}

namespace nn {
/// x / max(norm_p(x) along dim, eps) (torch.nn.functional.normalize).
template <typename T, typename D>
Tensor<T, D> normalize(const Tensor<T, D> &x, double p = 2.0, int64_t dim = 1,
                       double eps = 1e-12,
                       SourceLocation loc = SourceLocation::current()) {
  static_assert(IsFloat<T>, "normalize needs a float tensor");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::normalize(x.graphNode(), p, dim, eps));
}
} // namespace nn

/// The graph nodes of tensors of any element types and ranks, for
/// exportLibrary: `graphNodes(x, w)`.
template <typename... Ts>
std::vector<detail::NodePtr> graphNodes(const Ts &...tensors) {
  return {tensors.graphNode()...};
}

/// Compiles the function from `inputs` (leaf tensors: its arguments, in
/// order) to `outputs` ahead of time into the library `path` (`.so`, `.a`
/// or `.o`; harp/Runtime/Export.h): every other tensor the outputs read (a
/// model's weights) is a constant of the library. Its C entry point is
/// `<prefix>_<name>`.
///
///   harp::exportLibrary(harp::graphNodes(logits), harp::graphNodes(x),
///                       "libmodel.so", "forward", options);
/// With `gradients` (indices of float inputs) the function is a training
/// step returning the outputs and the gradients of the first (a 0-d loss)
/// with respect to those inputs.
inline void exportLibrary(const std::vector<detail::NodePtr> &outputs,
                          const std::vector<detail::NodePtr> &inputs,
                          const std::string &path, const std::string &name,
                          const ExportOptions &exportOptions,
                          const CompileOptions &options = {},
                          const std::vector<int64_t> &gradients = {}) {
  detail::exportGraphLibrary(outputs, inputs, path, name, exportOptions,
                             options, gradients);
}

/// The gradients of the 0-d `loss` with respect to each of `inputs`
/// (leaves that require a gradient, or tensors computed in the loss's
/// graph), returned without touching any leaf's accumulated gradient
/// (torch.autograd.grad). Throws for an input the loss does not depend on.
/// With `createGraph` the gradients are computed tensors, differentiable
/// again (a Hessian-vector product: grad of (g * v).sum()).
///
///   std::vector<Tensor<float>> g = harp::grad(loss, {w, h});  // dW, dh
template <typename L, typename LD, typename T, typename D>
std::vector<Tensor<T, D>>
grad(const Tensor<L, LD> &loss, const std::vector<Tensor<T, D>> &inputs,
     const CompileOptions &options = {}, bool createGraph = false) {
  static_assert(IsFloat<L> && IsFloat<T>, "grad needs float tensors");
  std::vector<detail::NodePtr> nodes;
  for (const Tensor<T, D> &input : inputs)
    nodes.push_back(input.graphNode());
  std::vector<detail::NodePtr> found =
      detail::gradients(loss.graphNode(), nodes, options, createGraph);
  std::vector<Tensor<T, D>> result;
  for (size_t i = 0; i < found.size(); ++i) {
    if (!found[i])
      throw Error("grad: input " + std::to_string(i) +
                  " was not used to compute the loss");
    result.push_back(Tensor<T, D>(found[i]));
  }
  return result;
}

} // namespace harp

#endif // HARP_API_TENSOR_H
