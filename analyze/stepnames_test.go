package analyze

import "testing"

func TestClassifyStepKey(t *testing.T) {
	for _, c := range []struct {
		name string
		want stepKind
	}{
		// PyTorch emit_nvtx op ranges, as recorded on an H100 (issue 27).
		{"aten::empty_strided, op_id = 999730", stepOp},
		{"aten::add_, seq = 1234, op_id = 12", stepOp},
		{"autograd::engine::evaluate_function: AddmmBackward0", stepOp},
		{"Optimizer.step#AdamW.step", stepOp},
		{"Optimizer.zero_grad#AdamW.zero_grad", stepOp},
		{"[Strategy]SingleDeviceStrategy.training_step", stepOp},
		{"[LightningModule]BoringModel.optimizer_step", stepOp},
		{"ncclGroupEnd", stepOp},
		{"ncclAllReduce", stepOp},
		{"MPI_Send", stepOp},
		{"cudaMemcpy", stepOp},
		{"cuLaunchKernel", stepOp},
		// Ranges named like iterations.
		{"ProfilerStep#17", stepNumbered},
		{"train_step 9", stepNumbered},
		{"step 3", stepNumbered},
		{"iteration 12", stepNumbered},
		{"Batch 4", stepNumbered},
		{"run_training_batch", stepWord},
		{"load_batch", stepWord},
		{"train_step", stepWord},
		{"epoch 2", stepEpoch},
		// User ranges that say nothing of iterations.
		{"forward_backward", stepOther},
		{"saxpy", stepOther},
		{"MatrixMultiplication", stepOther},
	} {
		if got := classifyStepKey(digitsToN(c.name)); got != c.want {
			t.Errorf("%q (key %q): kind %d, want %d", c.name, digitsToN(c.name), got, c.want)
		}
	}
}
