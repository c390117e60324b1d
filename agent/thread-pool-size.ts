// Imported first by agent/main.ts, so it runs before anything touches libuv's thread pool (libuv reads
// UV_THREADPOOL_SIZE once, when the pool first starts). The agent's file reads are small and few at a time: two
// threads serve them, and each of the two idle threads not started saves its stack and its malloc arena (several
// MiB of resident memory on an agent that must stay small). An operator's own setting wins.
process.env.UV_THREADPOOL_SIZE ??= '2';
