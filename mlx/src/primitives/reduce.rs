//! Reductions: Reduce, ArgReduce, LogSumExp, Softmax.
