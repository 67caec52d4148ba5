module kprig/probe

go 1.26.0
