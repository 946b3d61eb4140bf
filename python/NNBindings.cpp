//===- NNBindings.cpp - harp::nn's layers for harp.nn.functional ----------===//
//
// _harp.nn: the C++ layers with every argument explicit. harp.nn.functional
// parses torch's argument forms (ints or tuples, "same", unbatched inputs)
// and calls these, so Python and C++ share one implementation.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/API/NN.h"

namespace harp::python {

namespace {

NodePtr nodeOrNull(const py::object &o) {
  return o.is_none() ? nullptr : o.cast<NodePtr>();
}

nn::Reduction reductionOf(const std::string &op, const std::string &name) {
  if (name == "mean")
    return nn::Reduction::Mean;
  if (name == "sum")
    return nn::Reduction::Sum;
  if (name == "none")
    return nn::Reduction::None;
  throw Error(op + ": reduction must be 'mean', 'sum' or 'none', got '" + name +
              "'");
}

} // namespace

void bindNN(py::module_ &parent) {
  namespace dnn = detail::nn;
  py::module_ m = parent.def_submodule(
      "nn", "harp::nn's layers with explicit arguments (harp.nn.functional "
            "is the interface).");
  m.def(
      "linear",
      [](const NodePtr &x, const NodePtr &w, const py::object &bias) {
        return dnn::linear(x, w, nodeOrNull(bias));
      },
      py::arg("input"), py::arg("weight"), py::arg("bias"));
  m.def(
      "conv",
      [](const std::string &op, const NodePtr &x, const NodePtr &w,
         const py::object &bias, std::vector<int64_t> stride,
         std::vector<int64_t> padding, bool same, std::vector<int64_t> dilation,
         int64_t groups) {
        nn::ConvOptions o;
        o.stride(std::move(stride))
            .padding(std::move(padding))
            .dilation(std::move(dilation))
            .groups(groups);
        o.samePadding = same;
        return dnn::conv(x, w, nodeOrNull(bias), o, op);
      },
      py::arg("op"), py::arg("input"), py::arg("weight"), py::arg("bias"),
      py::arg("stride"), py::arg("padding"), py::arg("same"),
      py::arg("dilation"), py::arg("groups"));
  m.def(
      "conv_transpose",
      [](const std::string &op, const NodePtr &x, const NodePtr &w,
         const py::object &bias, std::vector<int64_t> stride,
         std::vector<int64_t> padding, std::vector<int64_t> outputPadding,
         std::vector<int64_t> dilation, int64_t groups) {
        nn::ConvTransposeOptions o;
        o.stride(std::move(stride))
            .padding(std::move(padding))
            .output_padding(std::move(outputPadding))
            .dilation(std::move(dilation))
            .groups(groups);
        return dnn::convTranspose(x, w, nodeOrNull(bias), o, op);
      },
      py::arg("op"), py::arg("input"), py::arg("weight"), py::arg("bias"),
      py::arg("stride"), py::arg("padding"), py::arg("output_padding"),
      py::arg("dilation"), py::arg("groups"));
  // max_pool and its indices take the same arguments.
  auto maxPoolOptions = [](std::vector<int64_t> kernel,
                           std::vector<int64_t> stride,
                           std::vector<int64_t> padding,
                           std::vector<int64_t> dilation, bool ceilMode) {
    nn::PoolOptions o(std::move(kernel));
    o.stride(std::move(stride))
        .padding(std::move(padding))
        .dilation(std::move(dilation))
        .ceil_mode(ceilMode);
    return o;
  };
  for (bool indices : {false, true})
    m.def(
        indices ? "max_pool_indices" : "max_pool",
        [indices, maxPoolOptions](
            const std::string &op, const NodePtr &x,
            std::vector<int64_t> kernel, std::vector<int64_t> stride,
            std::vector<int64_t> padding, std::vector<int64_t> dilation,
            bool ceilMode) {
          nn::PoolOptions o =
              maxPoolOptions(std::move(kernel), std::move(stride),
                             std::move(padding), std::move(dilation), ceilMode);
          return indices ? dnn::maxPoolIndices(x, o, op)
                         : dnn::maxPool(x, o, op);
        },
        py::arg("op"), py::arg("input"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"));
  m.def(
      "avg_pool",
      [](const std::string &op, const NodePtr &x, std::vector<int64_t> kernel,
         std::vector<int64_t> stride, std::vector<int64_t> padding,
         bool ceilMode, bool countIncludePad, int64_t divisorOverride) {
        nn::PoolOptions o(std::move(kernel));
        o.stride(std::move(stride))
            .padding(std::move(padding))
            .ceil_mode(ceilMode)
            .count_include_pad(countIncludePad)
            .divisor_override(divisorOverride);
        return dnn::avgPool(x, o, op);
      },
      py::arg("op"), py::arg("input"), py::arg("kernel"), py::arg("stride"),
      py::arg("padding"), py::arg("ceil_mode"), py::arg("count_include_pad"),
      py::arg("divisor_override"));
  m.def(
      "adaptive_avg_pool",
      [](const std::string &op, const NodePtr &x,
         std::vector<int64_t> outputSize) {
        return dnn::adaptiveAvgPool(x, std::move(outputSize), op);
      },
      py::arg("op"), py::arg("input"), py::arg("output_size"));
  m.def(
      "adaptive_max_pool",
      [](const std::string &op, const NodePtr &x,
         std::vector<int64_t> outputSize) {
        return dnn::adaptiveMaxPool(x, std::move(outputSize), op);
      },
      py::arg("op"), py::arg("input"), py::arg("output_size"));
  m.def("im2col", &dnn::im2col, py::arg("input"), py::arg("kernel"),
        py::arg("stride"), py::arg("padding"));
  m.def("col2im", &dnn::col2im, py::arg("input"), py::arg("output_size"),
        py::arg("kernel"), py::arg("stride"), py::arg("padding"));
  m.def(
      "batch_norm",
      [](const NodePtr &x, const py::object &runningMean,
         const py::object &runningVar, const py::object &weight,
         const py::object &bias, bool training, double momentum, double eps) {
        return dnn::batchNorm(x, nodeOrNull(runningMean),
                              nodeOrNull(runningVar), nodeOrNull(weight),
                              nodeOrNull(bias), training, momentum, eps);
      },
      py::arg("input"), py::arg("running_mean"), py::arg("running_var"),
      py::arg("weight"), py::arg("bias"), py::arg("training"),
      py::arg("momentum"), py::arg("eps"));
  m.def(
      "layer_norm",
      [](const NodePtr &x, std::vector<int64_t> shape, const py::object &weight,
         const py::object &bias, double eps) {
        return dnn::layerNorm(x, std::move(shape), nodeOrNull(weight),
                              nodeOrNull(bias), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight"),
      py::arg("bias"), py::arg("eps"));
  m.def(
      "group_norm",
      [](const NodePtr &x, int64_t groups, const py::object &weight,
         const py::object &bias, double eps) {
        return dnn::groupNorm(x, groups, nodeOrNull(weight), nodeOrNull(bias),
                              eps);
      },
      py::arg("input"), py::arg("num_groups"), py::arg("weight"),
      py::arg("bias"), py::arg("eps"));
  m.def("dropout", &dnn::dropout, py::arg("input"), py::arg("p"),
        py::arg("training"), py::arg("seed"));
  m.def(
      "cross_entropy",
      [](const NodePtr &x, const NodePtr &target, int64_t ignoreIndex,
         double labelSmoothing, const std::string &reduction) {
        nn::CrossEntropyOptions o;
        o.ignore_index(ignoreIndex)
            .label_smoothing(labelSmoothing)
            .reduction(reductionOf("cross_entropy", reduction));
        return dnn::crossEntropy(x, target, o);
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index"),
      py::arg("label_smoothing"), py::arg("reduction"));
  m.def(
      "nll_loss",
      [](const NodePtr &x, const NodePtr &target, int64_t ignoreIndex,
         const std::string &reduction) {
        return dnn::nllLoss(x, target, ignoreIndex,
                            reductionOf("nll_loss", reduction));
      },
      py::arg("input"), py::arg("target"), py::arg("ignore_index"),
      py::arg("reduction"));
  // Element-wise losses: the target may be a tensor, an array or a number.
  using Loss = NodePtr (*)(NodePtr, NodePtr, nn::Reduction);
  for (auto [name, fn] : std::initializer_list<std::pair<const char *, Loss>>{
           {"mse_loss", &dnn::mseLoss},
           {"l1_loss", &dnn::l1Loss},
           {"binary_cross_entropy", &dnn::binaryCrossEntropy},
           {"binary_cross_entropy_with_logits",
            &dnn::binaryCrossEntropyWithLogits}}) {
    std::string op = name;
    m.def(
        name,
        [op, fn = fn](const NodePtr &x, const py::object &target,
                      const std::string &reduction) {
          NodePtr t = operand(x, target);
          if (detail::shapeOf(t) != detail::shapeOf(x))
            t = detail::expand(t, detail::shapeOf(x));
          return fn(x, t, reductionOf(op, reduction));
        },
        py::arg("input"), py::arg("target"), py::arg("reduction"));
  }
  for (auto [name, fn] : std::initializer_list<std::pair<
           const char *, NodePtr (*)(NodePtr, NodePtr, double, nn::Reduction)>>{
           {"smooth_l1_loss", &dnn::smoothL1Loss},
           {"huber_loss", &dnn::huberLoss}}) {
    std::string op = name;
    m.def(
        name,
        [op, fn = fn](const NodePtr &x, const py::object &target,
                      double parameter, const std::string &reduction) {
          NodePtr t = operand(x, target);
          if (detail::shapeOf(t) != detail::shapeOf(x))
            t = detail::expand(t, detail::shapeOf(x));
          return fn(x, t, parameter, reductionOf(op, reduction));
        },
        py::arg("input"), py::arg("target"), py::arg("parameter"),
        py::arg("reduction"));
  }
  m.def(
      "kl_div",
      [](const NodePtr &x, const py::object &target, bool logTarget) {
        NodePtr t = operand(x, target);
        if (detail::shapeOf(t) != detail::shapeOf(x))
          t = detail::expand(t, detail::shapeOf(x));
        return dnn::klDiv(x, t, logTarget);
      },
      py::arg("input"), py::arg("target"), py::arg("log_target"),
      "The pointwise KL divergence (unreduced).");
  m.def(
      "attention",
      [](const NodePtr &q, const NodePtr &k, const NodePtr &v,
         const py::object &mask, bool causal, std::optional<double> scale,
         double dropoutP, uint64_t seed) {
        return dnn::attention(q, k, v, nodeOrNull(mask), causal, scale,
                              dropoutP, seed);
      },
      py::arg("query"), py::arg("key"), py::arg("value"), py::arg("mask"),
      py::arg("causal"), py::arg("scale"), py::arg("dropout_p"),
      py::arg("seed"));
}

} // namespace harp::python
