"""Child process of the remote tests: a real MindSpore training recorded by TrainMonitor straight into an s3://
run folder, and a SummaryRecord run (MindSpore writes ``*_MS`` files only to local folders) for the test to upload.

Usage: remote_training.py RUN_URL MS_DIR
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(run_url, ms_dir):
    from ms_training import train_tiny

    monitor = train_tiny(run_url, epochs=2, collect_freq=4)
    writer_ok = monitor.writer is None or monitor.writer.failed is None
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    with SummaryRecord(ms_dir, num_process=1) as rec:
        for step in range(1, 41):
            rec.add_value("scalar", "loss", Tensor(np.float32(1.0 / step)))
            rec.record(step)
    print("ok" if writer_ok else "writer failed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
