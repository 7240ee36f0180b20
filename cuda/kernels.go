package cuda

// kernelNames lists every entry point of the PTX; the cuda build resolves
// them all when it opens a device, so a stale PTX fails at once with the
// missing name, and TestPTXEntries checks them against the checked-in PTX.
var kernelNames = []string{
	"gpnb_scale_f64", "gpnb_scale_f32",
	"gpnb_mulfree_f64_d8_c16", "gpnb_mulfree_f64_d32_c16", "gpnb_mulfree_f64_d0_c16",
	"gpnb_mulfree_f32_d8_c16", "gpnb_mulfree_f32_d32_c16", "gpnb_mulfree_f32_d0_c16",
	"gpnb_mulfree_f64_d8_c32", "gpnb_mulfree_f64_d32_c32", "gpnb_mulfree_f64_d0_c32",
	"gpnb_mulfree_f32_d8_c32", "gpnb_mulfree_f32_d32_c32", "gpnb_mulfree_f32_d0_c32",
	"gpnb_build_f64", "gpnb_build_f32",
	"gpnb_muldense_f64_c16", "gpnb_muldense_f32_c16", "gpnb_muldense_f64_c32", "gpnb_muldense_f32_c32",
	"gpnb_block_f64", "gpnb_block_f32", "gpnb_sumparts_f64", "gpnb_sumparts_f32",
	"gpnb_reduce_f64_d8", "gpnb_reduce_f64_d32", "gpnb_reduce_f64_d0",
	"gpnb_reduce_f32_d8", "gpnb_reduce_f32_d32", "gpnb_reduce_f32_d0",
}
