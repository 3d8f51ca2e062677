// Test data shared by the flame graph tests.

// The numbers of Pyroscope's own "SimpleGoApp" test profile (grafana/pyroscope,
// public/app/services/TestData.ts): an independent encoder's output, including a non-zero x
// delta (main.fastFunction under main.main starts 2 after main.work ends).
export const SIMPLE = {
  names: ['total', 'runtime.main', 'main.slowFunction', 'main.work', 'main.main', 'main.fastFunction'],
  levels: [
    [0, 988, 0, 0],
    [0, 988, 0, 1],
    [0, 214, 0, 5, 0, 3, 2, 4, 0, 771, 0, 2],
    [0, 214, 214, 3, 2, 1, 1, 5, 0, 771, 771, 3],
  ],
};
