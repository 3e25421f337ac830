"""What the tests share: the op table (`op_table`), numerical gradient checks (`gradcheck`),
NumPy references of the layers (`layer_reference`), small models (`tiny_models`), the CuPy
stand-in (`emulated_cupy`) and its kernel compiler (`nvrtc`), and the distributed tests'
rank program (`mpi_worker`)."""
