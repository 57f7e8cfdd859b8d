"""Reading recorded data: our view over TensorBoard's data provider, MindSpore ``_MS`` files, tier classification
and spike-preserving downsampling."""
