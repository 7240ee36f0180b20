module github.com/gpnb/gpnb/results/speed/fast-preset/lbfgs

go 1.26.8

require (
	github.com/gpnb/gpnb v0.0.0
	gonum.org/v1/gonum v0.17.0
)

require (
	golang.org/x/tools v0.30.0 // indirect
	gonum.org/v1/netlib v0.0.0-20230729102104-8b8060e7531f // indirect
)

replace github.com/gpnb/gpnb => ../../../..
