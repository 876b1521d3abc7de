//! The study's models as tch::nn modules. Variables live in one VarStore
//! under PyTorch's state-dict names (conv1.weight, features.0.weight,
//! rnn.weight_ih_l0, ...), so safetensors files travel between this runner,
//! the Python runner and crossbind unchanged. The forward passes call the
//! same libtorch operations in the same order as runners/pytorch/
//! crossbind_torch.py, which makes training from the same weights
//! reproduce PyTorch/Python's numbers.
//!
//! Without --init the variables keep tch's own initialisation (seeded by
//! tch::manual_seed), which differs from PyTorch's: tch initialises
//! convolution biases to 0 and BatchNorm weights U(0, 1), RNN weights
//! kaiming-uniform and RNN biases 0.
use tch::nn::{self, ModuleT, RNN};
use tch::{Device, Kind, Reduction, Tensor};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    LeNet1,
    LeNet5,
    Vgg16,
    Lstm,
    Gru,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    Mnist,
    Cifar,
    Imdb,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Optim {
    Sgd,
    Adam,
}

impl Arch {
    pub const NAMES: [&'static str; 5] = ["gru", "lenet1", "lenet5", "lstm", "vgg16"];

    /// The model of a name, or an error line; GRU-rb is declared unsupported.
    pub fn parse(name: &str) -> Result<Arch, String> {
        Ok(match name {
            "lenet1" => Arch::LeNet1,
            "lenet5" => Arch::LeNet5,
            "vgg16" => Arch::Vgg16,
            "lstm" => Arch::Lstm,
            "gru" => Arch::Gru,
            "gru-rb" => {
                return Err("model gru-rb is not supported by this binding: PyTorch's GRU applies the \
                            reset gate after the recurrent product and tch has no reset-before GRU"
                    .into())
            }
            _ => return Err(format!("unknown model {name} (known: {})", Self::NAMES.join(", "))),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::LeNet1 => "lenet1",
            Arch::LeNet5 => "lenet5",
            Arch::Vgg16 => "vgg16",
            Arch::Lstm => "lstm",
            Arch::Gru => "gru",
        }
    }

    pub fn data_format(self) -> DataFormat {
        match self {
            Arch::LeNet1 | Arch::LeNet5 => DataFormat::Mnist,
            Arch::Vgg16 => DataFormat::Cifar,
            Arch::Lstm | Arch::Gru => DataFormat::Imdb,
        }
    }

    /// The IMDb models output one sigmoid probability per sample.
    pub fn binary(self) -> bool {
        self.data_format() == DataFormat::Imdb
    }

    /// One sample's shape (token ids for the text models).
    pub fn input_shape(self) -> Vec<i64> {
        match self.data_format() {
            DataFormat::Mnist => vec![1, 28, 28],
            DataFormat::Cifar => vec![3, 32, 32],
            DataFormat::Imdb => vec![300],
        }
    }

    /// Protocol section 3: optimizer, learning rate, batch, epochs.
    pub fn protocol(self) -> (Optim, f64, i64, i64) {
        match self {
            Arch::LeNet1 | Arch::LeNet5 | Arch::Vgg16 => (Optim::Sgd, 0.05, 128, 200),
            Arch::Lstm => (Optim::Adam, 8e-5, 256, 30),
            Arch::Gru => (Optim::Adam, 3e-4, 256, 30),
        }
    }
}

impl DataFormat {
    pub fn default_dir(self) -> &'static str {
        match self {
            DataFormat::Mnist => "/usr/share/datasets/fashion-mnist",
            DataFormat::Cifar => "data/cifar-stand-in",
            DataFormat::Imdb => "data/imdb-prepared",
        }
    }
}

/// Softmax cross-entropy on logits, binary cross-entropy on the sigmoid
/// output: the functions F.cross_entropy and F.binary_cross_entropy call.
pub fn loss_of(arch: Arch, out: &Tensor, y: &Tensor, reduction: Reduction) -> Tensor {
    if arch.binary() {
        out.squeeze_dim(1).binary_cross_entropy::<Tensor>(y, None, reduction)
    } else {
        out.cross_entropy_loss::<Tensor>(y, None, reduction, -100, 0.0)
    }
}

fn conv(p: nn::Path, c_in: i64, c_out: i64, k: i64, padding: i64, bias: bool) -> nn::Conv2D {
    nn::conv2d(p, c_in, c_out, k, nn::ConvConfig { padding, bias, ..Default::default() })
}

fn linear(p: nn::Path, d_in: i64, d_out: i64) -> nn::Linear {
    nn::linear(p, d_in, d_out, Default::default())
}

#[derive(Debug)]
struct LeNet1 {
    conv1: nn::Conv2D,
    conv2: nn::Conv2D,
    fc: nn::Linear,
}

impl LeNet1 {
    fn new(p: &nn::Path) -> Self {
        LeNet1 {
            conv1: conv(p / "conv1", 1, 4, 5, 2, true),
            conv2: conv(p / "conv2", 4, 12, 5, 0, true),
            fc: linear(p / "fc", 300, 10),
        }
    }
}

impl nn::Module for LeNet1 {
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs.apply(&self.conv1)
            .tanh()
            .max_pool2d_default(2)
            .apply(&self.conv2)
            .tanh()
            .max_pool2d_default(2)
            .flatten(1, -1)
            .apply(&self.fc)
    }
}

#[derive(Debug)]
struct LeNet5 {
    conv1: nn::Conv2D,
    conv2: nn::Conv2D,
    conv3: nn::Conv2D,
    fc1: nn::Linear,
    fc2: nn::Linear,
}

impl LeNet5 {
    fn new(p: &nn::Path) -> Self {
        LeNet5 {
            conv1: conv(p / "conv1", 1, 6, 5, 2, true),
            conv2: conv(p / "conv2", 6, 16, 5, 0, true),
            conv3: conv(p / "conv3", 16, 120, 5, 0, true),
            fc1: linear(p / "fc1", 120, 84),
            fc2: linear(p / "fc2", 84, 10),
        }
    }
}

impl nn::Module for LeNet5 {
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs.apply(&self.conv1)
            .tanh()
            .max_pool2d_default(2)
            .apply(&self.conv2)
            .tanh()
            .max_pool2d_default(2)
            .apply(&self.conv3)
            .tanh()
            .flatten(1, -1)
            .apply(&self.fc1)
            .tanh()
            .apply(&self.fc2)
    }
}

/// nn::BatchNorm with PyTorch's step counter (num_batches_tracked, int64),
/// kept so that the saved state dict has PyTorch's keys; with the fixed
/// momentum 0.1 it does not enter the computation.
#[derive(Debug)]
struct BatchNorm2d {
    bn: nn::BatchNorm,
    num_batches_tracked: Tensor,
}

impl BatchNorm2d {
    fn new(p: nn::Path, c: i64) -> Self {
        let counter = p.add("num_batches_tracked", Tensor::zeros([], (Kind::Int64, Device::Cpu)), false);
        BatchNorm2d { bn: nn::batch_norm2d(&p, c, Default::default()), num_batches_tracked: counter }
    }
}

impl ModuleT for BatchNorm2d {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        if train {
            let mut n = self.num_batches_tracked.shallow_clone();
            tch::no_grad(|| n += 1);
        }
        self.bn.forward_t(xs, train)
    }
}

const VGG16_PLAN: [i64; 18] = [64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0];

/// The protocol's VGG-16 for 32x32x3 (0 in the plan: max pooling), with
/// PyTorch's module layout features.N / classifier.N.
fn vgg16(p: &nn::Path, dropout: f64) -> nn::SequentialT {
    let f = p / "features";
    let mut features = nn::seq_t();
    let (mut idx, mut c) = (0, 3);
    for &v in VGG16_PLAN.iter() {
        if v == 0 {
            features = features.add_fn(|x| x.max_pool2d_default(2));
            idx += 1;
        } else {
            features = features
                .add(conv(&f / idx, c, v, 3, 1, false))
                .add(BatchNorm2d::new(&f / (idx + 1), v))
                .add_fn(|x| x.relu());
            idx += 3;
            c = v;
        }
    }
    let q = p / "classifier";
    let classifier = nn::seq_t()
        .add(linear(&q / 0, 512, 4096))
        .add_fn(|x| x.relu())
        .add_fn_t(move |x, train| x.dropout(dropout, train))
        .add(linear(&q / 3, 4096, 4096))
        .add_fn(|x| x.relu())
        .add_fn_t(move |x, train| x.dropout(dropout, train))
        .add(linear(&q / 6, 4096, 10));
    nn::seq_t().add(features).add_fn(|x| x.flatten(1, -1)).add(classifier)
}

#[derive(Debug)]
enum Recurrent {
    Lstm(nn::LSTM),
    Gru(nn::GRU),
}

/// The IMDb models: embedding 10,000 x 300, one recurrent layer (hidden 512,
/// batch first), the last step, dropout, dense 512 -> 1, sigmoid.
#[derive(Debug)]
struct RnnClassifier {
    embedding: nn::Embedding,
    rnn: Recurrent,
    fc: nn::Linear,
    dropout: f64,
}

const HIDDEN: i64 = 512;

impl RnnClassifier {
    fn new(p: &nn::Path, arch: Arch, dropout: f64) -> Self {
        let cfg = nn::RNNConfig { batch_first: true, ..Default::default() };
        let rnn = match arch {
            Arch::Lstm => Recurrent::Lstm(nn::lstm(p / "rnn", 300, HIDDEN, cfg)),
            _ => Recurrent::Gru(nn::gru(p / "rnn", 300, HIDDEN, cfg)),
        };
        RnnClassifier {
            embedding: nn::embedding(p / "embedding", 10000, 300, Default::default()),
            rnn,
            fc: linear(p / "fc", HIDDEN, 1),
            dropout,
        }
    }
}

impl ModuleT for RnnClassifier {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let e = xs.apply(&self.embedding);
        // The zero initial state [1, N, 512], as RNN::seq makes it, but
        // derived from the input with recorded operations: a traced module
        // (final.ts) then keeps its batch dimension free instead of the
        // tracing example's (PyTorch's nn.LSTM traces input.size(0) alike).
        let h0 = e.select(1, 0).narrow(1, 0, 1).zeros_like().expand([-1, HIDDEN], false).unsqueeze(0).contiguous();
        let h = match &self.rnn {
            Recurrent::Lstm(l) => l.seq_init(&e, &nn::LSTMState((h0.shallow_clone(), h0))).0,
            Recurrent::Gru(g) => g.seq_init(&e, &nn::GRUState(h0)).0,
        };
        h.select(1, -1).dropout(self.dropout, train).apply(&self.fc).sigmoid()
    }
}

/// A model with its variables.
pub struct Net {
    pub arch: Arch,
    pub vs: nn::VarStore,
    pub module: Box<dyn ModuleT>,
}

impl Net {
    /// Builds the model; tch's initialisation draws from the global
    /// generator (tch::manual_seed before this call).
    pub fn new(arch: Arch, dropout: f64) -> Net {
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let module: Box<dyn ModuleT> = match arch {
            Arch::LeNet1 => Box::new(LeNet1::new(&root)),
            Arch::LeNet5 => Box::new(LeNet5::new(&root)),
            Arch::Vgg16 => Box::new(vgg16(&root, dropout)),
            Arch::Lstm | Arch::Gru => Box::new(RnnClassifier::new(&root, arch, dropout)),
        };
        Net { arch, vs, module }
    }

    pub fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        self.module.forward_t(xs, train)
    }

    /// The variables in PyTorch's state-dict order (modules in definition
    /// order; weight, bias, running_mean, running_var, num_batches_tracked).
    pub fn state_dict(&self) -> Vec<(String, Tensor)> {
        let vars = self.vs.variables();
        let mut names: Vec<String> = vars.keys().cloned().collect();
        names.sort_by_key(|n| state_key(self.arch, n));
        names.into_iter().map(|n| (n.clone(), vars[&n].shallow_clone())).collect()
    }
}

/// Sort key giving PyTorch's state-dict order for this model's names.
fn state_key(arch: Arch, name: &str) -> (usize, usize, String) {
    let (module, leaf) = name.rsplit_once('.').unwrap_or(("", name));
    let module_rank = match arch {
        Arch::Vgg16 => {
            let mut it = module.split('.');
            let part = it.next().unwrap_or("");
            let idx: usize = it.next().and_then(|i| i.parse().ok()).unwrap_or(0);
            (if part == "features" { 0 } else { 1000 }) + idx
        }
        _ => ["conv1", "conv2", "conv3", "fc1", "fc2", "embedding", "rnn", "fc"]
            .iter()
            .position(|m| *m == module)
            .unwrap_or(99),
    };
    let leaf_rank = ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
        .iter()
        .position(|l| *l == leaf)
        .unwrap_or(5);
    // RNN leaves (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0) order by kind
    let rnn_rank = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"].iter().position(|l| *l == leaf);
    (module_rank, rnn_rank.unwrap_or(leaf_rank), leaf.to_string())
}
