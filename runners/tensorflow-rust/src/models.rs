//! The study's models as this binding sees them: a name, the data set they
//! read and the input a SavedModel of them takes (TensorFlow's NHWC images
//! or int32 token ids). The networks themselves come from the SavedModel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Arch {
    Lenet1,
    Lenet5,
    Vgg16,
    Lstm,
    Gru,
    GruRb,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DataFormat {
    Mnist,
    Cifar,
    Imdb,
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

impl Arch {
    pub const NAMES: [&'static str; 6] = ["lenet1", "lenet5", "vgg16", "lstm", "gru", "gru-rb"];

    pub fn parse(s: &str) -> Result<Arch, String> {
        Ok(match s {
            "lenet1" => Arch::Lenet1,
            "lenet5" => Arch::Lenet5,
            "vgg16" => Arch::Vgg16,
            "lstm" => Arch::Lstm,
            "gru" => Arch::Gru,
            "gru-rb" => Arch::GruRb,
            _ => return Err(format!("unknown model {s} (known: {})", Self::NAMES.join(", "))),
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn data_format(self) -> DataFormat {
        match self {
            Arch::Lenet1 | Arch::Lenet5 => DataFormat::Mnist,
            Arch::Vgg16 => DataFormat::Cifar,
            _ => DataFormat::Imdb,
        }
    }

    /// The IMDb models: one sigmoid probability per review.
    pub fn binary(self) -> bool {
        self.data_format() == DataFormat::Imdb
    }

    /// Outputs per sample: 10 logits, or 1 probability.
    pub fn outputs(self) -> i64 {
        if self.binary() {
            1
        } else {
            10
        }
    }

    /// One sample's shape as the SavedModel's input `x` takes it (NHWC).
    pub fn input_shape(self) -> Vec<i64> {
        match self.data_format() {
            DataFormat::Mnist => vec![28, 28, 1],
            DataFormat::Cifar => vec![32, 32, 3],
            DataFormat::Imdb => vec![300],
        }
    }
}
