package auditor

// FeatureLevels lists the rows of the feature table (Features) as the
// capability view reads them.
func FeatureLevels() []FeatureLevel {
	out := make([]FeatureLevel, len(Features))
	for i, f := range Features {
		out[i] = FeatureLevel{Name: f.Name, Title: f.Title, Kind: f.Kind, Level: f.Level, Since: f.Since}
	}
	return out
}
