"""Every evaluation of seer, one module per `python -m seer.evaluate --set`: Test-set-I
(set_one), Test-set-II (selection), noise, analytical, transfer, models and traces; what they
share (report, metrics) and the speed benchmarks (bench)."""
